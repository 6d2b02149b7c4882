//! What goes into a [`super::Host`] and what comes out of it: the whole interface between
//! the NFs of one worker and the I/O layer that drives them (sockets, the mesh between
//! workers, the SQN persister).

use std::net::SocketAddr;

use bytes::Bytes;
use http::{Method, StatusCode};
use ids::WorkerId;
use sbi::{NfType, SbiRequest, SbiResponse};
use store::sqn::PersistRequest;

use crate::amf::registration::Route;
use crate::udm::Forwarded;

/// A UE-associated NGAP message read from an association of this worker, with the route
/// the reader computed from its identifiers ([`crate::amf::registration::route`]).
#[derive(Debug)]
pub struct UeNgap {
    /// Where the identifiers say it belongs.
    pub route: Route,
    /// The core-wide association id ([`super::assoc`]).
    pub assoc: u32,
    /// The SCTP stream.
    pub stream: u16,
    /// Whether NG Setup succeeded on the association.
    pub ready: bool,
    /// The gNB id of the association (0 before NG Setup).
    pub gnb_id: u32,
    /// The NGAP PDU.
    pub pdu: Vec<u8>,
}

/// Names the reply channel of one request read by the I/O layer's SBI server: chosen by
/// the I/O layer, handed back unchanged in [`Output::SbiAnswer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ServerToken(pub u64);

/// Which NF of the host made a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Caller {
    Amf,
    Ausf,
    Smf,
    Udm,
}

impl Caller {
    /// The NF's name, for trace lines and the `User-Agent` of its SBI requests.
    pub(super) fn name(self) -> &'static str {
        match self {
            Caller::Amf => "AMF",
            Caller::Ausf => "AUSF",
            Caller::Smf => "SMF",
            Caller::Udm => "UDM",
        }
    }
}

/// Names one SBI call of the host ([`Output::SbiCall`]); the I/O layer hands it back with
/// the reply ([`Input::SbiReply`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CallToken {
    pub(super) caller: Caller,
    pub(super) id: u64,
}

impl CallToken {
    /// The calling NF's type, for the request's `User-Agent` (TS 29.500 §5.2.2.2).
    pub fn user_agent(&self) -> &'static str {
        self.caller.name()
    }
}

/// The reply to an SBI call, with the headers the callers read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallReply {
    /// Status code.
    pub status: StatusCode,
    /// `Location` (a created resource, TS 29.500 §5.2.2).
    pub location: Option<String>,
    /// `Content-Type` of `body` (a multipart Nsmf answer needs its boundary).
    pub content_type: Option<String>,
    /// The body.
    pub body: Bytes,
}

/// An SBI call that got no HTTP answer (connection refused or lost, timeout): the caller
/// sees a 504 (TS 29.500 §5.2.7), counted in
/// [`super::WorkerCounters::call_failures`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallFailed;

/// A message between the hosts of two workers of one process, carried by the I/O layer's
/// mesh as it is.
#[derive(Debug)]
#[non_exhaustive]
pub enum Hop {
    /// A UE-associated NGAP message for the receiver's AMF.
    Ngap {
        /// The association it came on.
        assoc: u32,
        /// The SCTP stream.
        stream: u16,
        /// Whether NG Setup succeeded on the association.
        ready: bool,
        /// The gNB id of the association.
        gnb_id: u32,
        /// The NGAP PDU.
        pdu: Vec<u8>,
    },
    /// An NGAP message for the worker that owns association `assoc` to send.
    NgapOut {
        /// The association.
        assoc: u32,
        /// The SCTP stream.
        stream: u16,
        /// The NGAP PDU.
        pdu: Vec<u8>,
    },
    /// An SBI request for the receiver's NF; answered with [`Hop::Answer`] under `tag`.
    Request {
        /// The NF it is for.
        nf: NfType,
        /// The worker holding the request.
        from: WorkerId,
        /// The request's tag at `from`.
        tag: u64,
        /// The request.
        req: SbiRequest,
    },
    /// A UDM request handed to the owner of its subscriber.
    Forward {
        /// The worker holding the request.
        from: WorkerId,
        /// The request's tag at `from`.
        tag: u64,
        /// What the UDM hands over.
        fwd: Forwarded,
    },
    /// An N1N2MessageTransfer looking for the AMF worker that holds its UE; `left` workers
    /// not yet asked (the last one answers, 404 if it has no such UE). Answered with
    /// [`Hop::Answer`] under `tag` to `from`.
    Seek {
        /// The worker holding the request.
        from: WorkerId,
        /// The request's tag at `from`.
        tag: u64,
        /// The request.
        req: SbiRequest,
        /// Workers not yet asked.
        left: u16,
    },
    /// The answer to request `tag` of the receiver.
    Answer {
        /// The request's tag at the receiver.
        tag: u64,
        /// The answer.
        resp: SbiResponse,
    },
    /// An SQN write completed (the locked placement tells every worker).
    SqnDone {
        /// The subscriber.
        supi: String,
        /// The SQNs claimed, `None` if the claim failed.
        claim: Option<store::sqn::Claim>,
    },
    /// A subscriber's stored record changed (the locked placement tells every worker: any of
    /// them may have parked a request for it).
    SubscriberChanged {
        /// The subscriber.
        supi: String,
    },
    /// The AMF of worker `from` entered overload (`start` is what the gNBs are told) or
    /// left it (`None`); for the receiver's N2 side ([`super::Host::poll_overload`]).
    Overload {
        /// The worker.
        from: WorkerId,
        /// The OVERLOAD START in force, or `None`: overload is over.
        start: Option<proto::ngap::OverloadStart>,
    },
}

impl Hop {
    /// Whether the I/O layer may refuse this hop when its hand-off queue is full
    /// ([`super::Host::hop_refused`]): new work (a UE's NGAP message, an SBI request) is
    /// refused at ingress with the protocol's overload answer; what completes admitted work
    /// (answers, replies to send, SQN results, overload signals) never is: it is bounded by
    /// the work admitted.
    pub fn refusable(&self) -> bool {
        matches!(
            self,
            Hop::Ngap { .. } | Hop::Request { .. } | Hop::Forward { .. } | Hop::Seek { .. }
        )
    }
}

/// One event for the host ([`super::Host::handle`]).
#[derive(Debug)]
pub enum Input<'a> {
    /// A UE-associated NGAP message read on this worker.
    Ngap(UeNgap),
    /// A message from another worker's host.
    Hop(Hop),
    /// A request read by this worker's SBI server for `nf`; `steered` when it came through
    /// a kernel-steered listener. Answered with [`Output::SbiAnswer`] under `server`.
    SbiRequest {
        /// The NF whose listener read it.
        nf: NfType,
        /// Read from a kernel-steered listener.
        steered: bool,
        /// The request.
        req: SbiRequest,
        /// The I/O layer's name for its reply channel.
        server: ServerToken,
    },
    /// The outcome of an [`Output::SbiCall`].
    SbiReply {
        /// The call.
        call: CallToken,
        /// Its reply, or how it failed.
        reply: Result<CallReply, CallFailed>,
    },
    /// A PFCP datagram from the UPF.
    Pfcp(&'a [u8]),
    /// An SQN write this host asked for ([`Output::PersistSqn`]) completed: the SQNs
    /// claimed
    /// stored, or `None` if it failed (or could not be asked).
    SqnDone {
        /// The subscriber.
        supi: String,
        /// The SQNs claimed.
        claim: Option<store::sqn::Claim>,
    },
    /// The provisioning API changed (or deleted) the stored record of a subscriber this
    /// worker owns ([`crate::udm::Udm::subscriber_changed`]).
    SubscriberChanged {
        /// The subscriber.
        supi: String,
    },
}

/// An SBI call the host wants made ([`Output::SbiCall`]), as one record so that every I/O
/// layer (the core's worker, the simulator) takes it whole.
#[derive(Debug)]
pub struct SbiCall {
    /// Names the call.
    pub call: CallToken,
    /// The NF called.
    pub nf: NfType,
    /// The instance to call (`http://host:port`) when the caller follows a link its producer
    /// gave; `None`: the directory's address of `nf`.
    pub base: Option<String>,
    /// HTTP method.
    pub method: Method,
    /// Path, with its query if any, without the authority.
    pub path: String,
    /// `Content-Type` of `body`.
    pub content_type: &'static str,
    /// The body (empty for a GET).
    pub body: Bytes,
    /// The server worker owning the request (shard-aware pool), `None` without the pool.
    pub owner: Option<sbi::Owner>,
}

/// One piece of work for the I/O layer ([`super::Host::poll_output`]).
#[derive(Debug)]
pub enum Output {
    /// Send an NGAP PDU (SCTP PPID 60) on `assoc`, an association of this worker.
    Ngap {
        /// The association.
        assoc: u32,
        /// The SCTP stream.
        stream: u16,
        /// The PDU.
        pdu: Vec<u8>,
    },
    /// Hand `hop` to worker `to`'s host ([`Input::Hop`]), in order with the other hops to
    /// `to`.
    Hop {
        /// The receiving worker.
        to: WorkerId,
        /// The message.
        hop: Hop,
    },
    /// Make an SBI call over HTTP/2 and report its outcome as [`Input::SbiReply`] under
    /// [`SbiCall::call`]. Every call must be answered.
    SbiCall(SbiCall),
    /// The answer to the request read under `server`.
    SbiAnswer {
        /// The request.
        server: ServerToken,
        /// The answer.
        response: SbiResponse,
    },
    /// Send a PFCP datagram to the UPF from this worker's PFCP socket (retransmissions
    /// come out again by themselves, TS 29.244 §6.4).
    Pfcp {
        /// The UPF.
        to: SocketAddr,
        /// The message.
        bytes: Vec<u8>,
    },
    /// Write this SQN high-water mark durably, then report [`Input::SqnDone`].
    PersistSqn(PersistRequest),
    /// Write the UDM's state behind, in order with this host's other state writes; nothing
    /// is reported back.
    SaveUdmState(store::StateWrite),
}
