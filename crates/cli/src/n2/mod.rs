//! N2 on real sockets: the AMF's listener.

pub(crate) mod amf;
