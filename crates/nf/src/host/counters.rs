//! The delivery-path counters of one worker: which way each message went (handled where
//! it was read, handed one hop to its owner, steered there by the kernel or a shard-aware
//! client) and what the I/O layer saw on its sockets. The host counts what it decides; the
//! I/O layer reports what only it sees through [`IoEvent`]. `/metrics` and the run reports
//! are built from [`WorkerCounters::for_each`], so the names there are the ones here.

/// Something only the I/O layer sees, counted by the host with the rest
/// ([`super::Host::record_io`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoEvent {
    /// NGAP messages read from this worker's SCTP associations (UE-associated or not).
    NgapRead(u64),
    /// A mesh send found the queue full; the hop waits for a retry.
    MeshRetry,
    /// Datagrams the kernel has dropped on the PFCP socket so far (`SO_RXQ_OVFL`).
    PfcpRxDropped(u64),
    /// The PFCP socket refused to send a datagram.
    PfcpSendFailed,
    /// Requests the worker's h2c client has sent again after REFUSED_STREAM so far
    /// ([`sbi::ClientStats::refused_retries`]).
    SbiStreamsRefused(u64),
    /// Requests the worker's h2c client has sent again so far because the server cannot
    /// have processed them ([`sbi::ClientStats::retries`]).
    SbiRetries(u64),
    /// Calls the worker has sent to another instance of the same type so far.
    SbiFailovers(u64),
    /// The worker's N2 SCTP endpoints so far: INITs refused with ABORT "Out of Resource"
    /// and DATA chunks dropped for want of room.
    N2Sctp {
        /// `sctp::EndpointStats::associations_refused`, summed over the worker's sockets.
        associations_refused: u64,
        /// `sctp::EndpointStats::data_dropped`, summed over the worker's sockets.
        data_dropped: u64,
    },
}

crate::summed_counters! {
    /// Delivery-path counters of one worker.
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
    pub struct WorkerCounters {
        /// NGAP messages read from this worker's SCTP associations.
        pub ngap_read: u64,
        /// UE-associated NGAP messages handled by this worker's AMF where they were read.
        pub ngap_local: u64,
        /// UE-associated NGAP messages handed to another worker.
        pub ngap_handed_off: u64,
        /// UE-associated NGAP messages received from another worker.
        pub ngap_from_mesh: u64,
        /// NGAP messages this worker's AMF produced and handed to the worker that owns their
        /// association to send.
        pub ngap_out_relayed: u64,
        /// SBI requests read from an h2c connection of this worker.
        pub sbi_served: u64,
        /// SBI requests handled by the NF of the worker that read (or made) them.
        pub sbi_local: u64,
        /// SBI requests handed to the owner worker.
        pub sbi_handed_off: u64,
        /// SBI requests received from another worker.
        pub sbi_from_mesh: u64,
        /// SBI answers sent back to the worker that holds the request.
        pub sbi_answers_relayed: u64,
        /// UDM requests forwarded to the owner after SUCI deconcealment.
        pub udm_forwards: u64,
        /// h2c calls made by this worker's NFs.
        pub h2c_calls: u64,
        /// Of those, transport failures answered with 504.
        pub call_failures: u64,
        /// Requests of those calls sent again because the server cannot have processed them
        /// (connection not set up, REFUSED_STREAM, GOAWAY below them: `sbi::retry`), within
        /// the call's deadline.
        pub call_retries: u64,
        /// Calls sent again to another instance of the same NF type because the one chosen
        /// failed in transport (the request named no instance's resource).
        pub call_failovers: u64,
        /// SQN writes asked of the persister.
        pub sqn_writes: u64,
        /// Mesh sends that found the queue full and were retried.
        pub mesh_retries: u64,
        /// SBI requests read from a kernel-steered listener of this worker and handled here
        /// with no hop: the `sk_reuseport` program delivered them to their owner (requests
        /// whose owner only the NF can tell, a SUCI or a new authentication context, count too:
        /// they are handled where they land).
        pub sbi_kernel_steered: u64,
        /// SBI requests read from a kernel-steered listener of this worker that belong to
        /// another worker (a client that is not shard-aware): handed off one hop, and also
        /// counted in `sbi_handed_off`. Zero when every client is shard-aware.
        pub sbi_misdirected: u64,
        /// h2c requests this worker's client sent on the connection of the server worker that
        /// owns them (shard-aware pool).
        pub sbi_pool_steered: u64,
        /// Nsmf_PDUSession requests read from this worker's SMF h2c listener (also in
        /// `sbi_served`).
        pub nsmf_served: u64,
        /// Of those, read from a kernel-steered listener by their owner (no hop).
        pub nsmf_kernel_steered: u64,
        /// Nsmf_PDUSession requests this worker's AMF sent over h2c on the connection of the
        /// SMF worker owning them.
        pub nsmf_pool_steered: u64,
        /// Nsmf_PDUSession requests handed to the owner worker (also in `sbi_handed_off`).
        pub nsmf_handed_off: u64,
        /// Namf_Communication N1N2MessageTransfers read from this worker's AMF h2c listener
        /// (also in `sbi_served`).
        pub namf_served: u64,
        /// Of those, read from a kernel-steered listener by the worker holding the UE.
        pub namf_kernel_steered: u64,
        /// N1N2MessageTransfers this worker's SMF sent over h2c on the connection of the AMF
        /// worker with its own index (the one whose shard called it).
        pub namf_pool_steered: u64,
        /// N1N2MessageTransfers passed to another worker in search of the UE (also in
        /// `sbi_handed_off`): the SUPI in the path does not name the AMF worker, so a transfer
        /// that lands elsewhere goes round the workers until one holds the UE.
        pub namf_handed_off: u64,
        /// PFCP requests the SMF sent again after T1 (TS 29.244 §6.4): each is a session
        /// procedure that waited at least T1.
        pub pfcp_retransmitted: u64,
        /// PFCP requests given up on after N1 retransmissions.
        pub pfcp_timed_out: u64,
        /// PFCP datagrams the kernel dropped on this worker's socket (`SO_RXQ_OVFL`: a full
        /// receive buffer).
        pub pfcp_rx_dropped: u64,
        /// PFCP datagrams the socket refused to send (each lost until its retransmission).
        pub pfcp_send_failed: u64,
        /// SBI requests read by this worker answered 503 NF_CONGESTION because the worker
        /// held `sbi_max_requests_in_progress` requests.
        pub sbi_congested: u64,
        /// SBI requests answered 503 NF_CONGESTION at ingress because the hand-off queue to
        /// their owner and this worker's outbox were full.
        pub sbi_mesh_refused: u64,
        /// UE-associated NGAP messages dropped at ingress because the hand-off queue to their
        /// owner and this worker's outbox were full.
        pub ngap_mesh_refused: u64,
        /// Requests this worker's h2c client sent again after the server refused their stream
        /// (REFUSED_STREAM, RFC 9113 §8.7).
        pub sbi_streams_refused: u64,
        /// Registrations this worker's AMF rejected with #22 and T3346 in overload.
        pub amf_congestion_rejects: u64,
        /// Registrations this worker's AMF rejected with #22 and T3346 at its UE context limit.
        pub amf_context_limit_rejects: u64,
        /// INITIAL UE MESSAGEs this worker's AMF dropped past its UE context limit and the
        /// rejects' headroom.
        pub amf_initial_ue_dropped: u64,
        /// Times this worker's AMF entered overload.
        pub amf_overload_starts: u64,
        /// CreateSMContexts this worker's SMF refused at its SM context limit.
        pub smf_context_limit_rejects: u64,
        /// SCTP INITs this worker's N2 endpoints refused with ABORT "Out of Resource" at the
        /// association limit.
        pub sctp_associations_refused: u64,
        /// SCTP DATA chunks this worker's N2 endpoints dropped for want of room (receive
        /// window or reassembly fragments).
        pub sctp_data_dropped: u64,
    }
}

impl WorkerCounters {
    /// Counts one I/O event.
    pub(super) fn record(&mut self, e: IoEvent) {
        match e {
            IoEvent::NgapRead(n) => self.ngap_read += n,
            IoEvent::MeshRetry => self.mesh_retries += 1,
            IoEvent::PfcpRxDropped(total) => self.pfcp_rx_dropped = total,
            IoEvent::PfcpSendFailed => self.pfcp_send_failed += 1,
            IoEvent::SbiStreamsRefused(total) => self.sbi_streams_refused = total,
            IoEvent::SbiRetries(total) => self.call_retries = total,
            IoEvent::SbiFailovers(total) => self.call_failovers = total,
            IoEvent::N2Sctp {
                associations_refused,
                data_dropped,
            } => {
                self.sctp_associations_refused = associations_refused;
                self.sctp_data_dropped = data_dropped;
            }
        }
    }

    /// Each counter with its name and help text, in a fixed order: the `/metrics` page
    /// (`steer5g_<name>_total{worker="N"}`) and the run reports are built from this, so a
    /// new field needs only its line here (and in [`WorkerCounters::add`]).
    pub fn for_each(&self, mut f: impl FnMut(&'static str, &'static str, u64)) {
        f("ngap_read", "NGAP messages read from SCTP.", self.ngap_read);
        f(
            "ngap_local",
            "UE-associated NGAP messages handled by the worker that read them.",
            self.ngap_local,
        );
        f(
            "ngap_handed_off",
            "UE-associated NGAP messages handed to their owner worker.",
            self.ngap_handed_off,
        );
        f(
            "ngap_from_mesh",
            "UE-associated NGAP messages received from another worker.",
            self.ngap_from_mesh,
        );
        f(
            "ngap_out_relayed",
            "NGAP messages handed to worker 0 to send.",
            self.ngap_out_relayed,
        );
        f(
            "sbi_served",
            "SBI requests read from an h2c connection.",
            self.sbi_served,
        );
        f(
            "sbi_local",
            "SBI requests handled by the worker that read or made them.",
            self.sbi_local,
        );
        f(
            "sbi_handed_off",
            "SBI requests handed to their owner worker.",
            self.sbi_handed_off,
        );
        f(
            "sbi_kernel_steered",
            "SBI requests read from a kernel-steered listener by the worker owning them (no hop).",
            self.sbi_kernel_steered,
        );
        f(
            "sbi_misdirected",
            "SBI requests that came through a kernel-steered listener but belong to another worker (also handed off).",
            self.sbi_misdirected,
        );
        f(
            "sbi_pool_steered",
            "SBI requests this worker's client sent on the connection of the owning server worker.",
            self.sbi_pool_steered,
        );
        f(
            "nsmf_served",
            "Nsmf_PDUSession requests read from the SMF's h2c listener.",
            self.nsmf_served,
        );
        f(
            "nsmf_kernel_steered",
            "Nsmf_PDUSession requests read by the worker owning them from a kernel-steered listener (no hop).",
            self.nsmf_kernel_steered,
        );
        f(
            "nsmf_pool_steered",
            "Nsmf_PDUSession requests the AMF sent over h2c on the connection of the owning SMF worker.",
            self.nsmf_pool_steered,
        );
        f(
            "nsmf_handed_off",
            "Nsmf_PDUSession requests handed to their owner worker.",
            self.nsmf_handed_off,
        );
        f(
            "namf_served",
            "Namf_Communication N1N2MessageTransfers read from the AMF's h2c listener.",
            self.namf_served,
        );
        f(
            "namf_kernel_steered",
            "N1N2MessageTransfers read by the worker holding the UE from a kernel-steered listener (no hop).",
            self.namf_kernel_steered,
        );
        f(
            "namf_pool_steered",
            "N1N2MessageTransfers the SMF sent over h2c on the connection of the AMF worker of its own index.",
            self.namf_pool_steered,
        );
        f(
            "namf_handed_off",
            "N1N2MessageTransfers passed to another worker in search of their UE.",
            self.namf_handed_off,
        );
        f(
            "sbi_from_mesh",
            "SBI requests received from another worker.",
            self.sbi_from_mesh,
        );
        f(
            "sbi_answers_relayed",
            "SBI answers sent back to the worker holding the request.",
            self.sbi_answers_relayed,
        );
        f(
            "udm_forwards",
            "UDM requests forwarded to the owner after SUCI deconcealment.",
            self.udm_forwards,
        );
        f(
            "h2c_calls",
            "h2c calls made by the AMF and AUSF.",
            self.h2c_calls,
        );
        f(
            "call_failures",
            "h2c calls that failed in transport (answered 504).",
            self.call_failures,
        );
        f(
            "call_retries",
            "h2c requests sent again because the server cannot have processed them.",
            self.call_retries,
        );
        f(
            "call_failovers",
            "h2c calls sent again to another instance of the NF type after a transport failure.",
            self.call_failovers,
        );
        f(
            "sqn_writes",
            "SQN writes asked of the persister.",
            self.sqn_writes,
        );
        f(
            "mesh_retries",
            "Mesh sends that found the queue full and were retried.",
            self.mesh_retries,
        );
        f(
            "pfcp_retransmitted",
            "PFCP requests sent again after T1 (each a session procedure that waited 3 s).",
            self.pfcp_retransmitted,
        );
        f(
            "pfcp_timed_out",
            "PFCP requests given up on after N1 retransmissions.",
            self.pfcp_timed_out,
        );
        f(
            "pfcp_rx_dropped",
            "PFCP datagrams the kernel dropped on the worker's socket (receive buffer full).",
            self.pfcp_rx_dropped,
        );
        f(
            "pfcp_send_failed",
            "PFCP datagrams the worker's socket refused to send.",
            self.pfcp_send_failed,
        );
        f(
            "sbi_congested",
            "SBI requests answered 503 NF_CONGESTION at the worker's requests-in-progress limit.",
            self.sbi_congested,
        );
        f(
            "sbi_mesh_refused",
            "SBI requests answered 503 NF_CONGESTION at ingress because the hand-off outbox was full.",
            self.sbi_mesh_refused,
        );
        f(
            "ngap_mesh_refused",
            "UE-associated NGAP messages dropped at ingress because the hand-off outbox was full.",
            self.ngap_mesh_refused,
        );
        f(
            "sbi_streams_refused",
            "h2c requests sent again after the server refused their stream (REFUSED_STREAM).",
            self.sbi_streams_refused,
        );
        f(
            "amf_congestion_rejects",
            "Registrations rejected with 5GMM #22 and T3346 while the AMF worker was overloaded.",
            self.amf_congestion_rejects,
        );
        f(
            "amf_context_limit_rejects",
            "Registrations rejected with 5GMM #22 and T3346 at the AMF worker's UE context limit.",
            self.amf_context_limit_rejects,
        );
        f(
            "amf_initial_ue_dropped",
            "INITIAL UE MESSAGEs dropped past the UE context limit and the rejects' headroom.",
            self.amf_initial_ue_dropped,
        );
        f(
            "amf_overload_starts",
            "Times the AMF worker entered overload (registrations in flight above the high mark).",
            self.amf_overload_starts,
        );
        f(
            "smf_context_limit_rejects",
            "CreateSMContexts refused with 500 INSUFFICIENT_RESOURCES (5GSM #26) at the SM context limit.",
            self.smf_context_limit_rejects,
        );
        f(
            "sctp_associations_refused",
            "SCTP INITs on N2 refused with ABORT Out of Resource at the association limit.",
            self.sctp_associations_refused,
        );
        f(
            "sctp_data_dropped",
            "SCTP DATA chunks on N2 dropped unacknowledged for want of receive room.",
            self.sctp_data_dropped,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_counter_is_listed_once_and_adds_up() {
        let mut names = Vec::new();
        WorkerCounters::default().for_each(|n, _, _| names.push(n));
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n, "distinct names");
        let c = WorkerCounters {
            sbi_local: 2,
            pfcp_send_failed: 1,
            ..WorkerCounters::default()
        };
        let mut t = c;
        t.add(&c);
        let mut sum = 0;
        t.for_each(|_, _, v| sum += v);
        assert_eq!(sum, 6);
        t.record(IoEvent::PfcpRxDropped(9));
        t.record(IoEvent::PfcpRxDropped(11));
        t.record(IoEvent::NgapRead(3));
        t.record(IoEvent::MeshRetry);
        assert_eq!((t.pfcp_rx_dropped, t.ngap_read, t.mesh_retries), (11, 3, 1));
        // The client's totals are taken as they are, and named as on /metrics.
        t.record(IoEvent::SbiRetries(4));
        t.record(IoEvent::SbiStreamsRefused(2));
        let mut seen = Vec::new();
        t.for_each(|name, _, v| {
            if matches!(name, "call_retries" | "sbi_streams_refused") {
                seen.push((name, v));
            }
        });
        assert_eq!(seen, [("call_retries", 4), ("sbi_streams_refused", 2)]);
        // Every field has its name: one u64 per name.
        assert_eq!(std::mem::size_of::<WorkerCounters>(), n * 8);
    }
}
