//! The UPF's XDP fast path (issue 5, item 3); implements [`upf::Datapath`].
