//! The runner's side of [`crate::load::recovery`]: what happens to the gNBs, the UEs and the
//! schedule when the AMF goes away and comes back.
//!
//! - First contact: no association answers for [`NO_ANSWER_WARNING`] → one warning naming
//!   the AMF; none for the connect timeout → every gNB that is still waiting fails with it.
//! - A set-up gNB loses its association → its UEs fail at once with
//!   [`FailureCause::AmfLost`](crate::load::driver::FailureCause::AmfLost) (held ones too),
//!   its N2 state goes, and it reconnects on a [`Link`] with a fresh NG Setup (TS 38.413
//!   §8.7.1.1). Runs start only on set-up gNBs meanwhile, and none while every gNB is down.
//! - No gNB up for the connect timeout → the run gives up.

use std::time::{Duration, Instant};

use sctp::AssocId;

use super::Runner;
use crate::gnb::GnbEvent;
use crate::load::driver::{Input, AMF_LOST};
use crate::load::recovery::{no_answer_message, Link, Outage, Outages, NO_ANSWER_WARNING};
use crate::load::socket::{GnbIdentity, LOCAL_PORT_BASE};
use crate::load::RanConfig;

/// What the runner keeps to bring gNBs back.
#[derive(Debug)]
pub(super) struct Recovering {
    /// One per gNB; `Up` for a gNB that was never lost.
    links: Vec<Link>,
    outages: Outages,
    identity: GnbIdentity,
    gnb_id_base: u32,
    sctp_port: u16,
    /// The AMF as named in messages.
    amf: String,
    connect_timeout: Duration,
    /// Since when no gNB has been set up (during an outage).
    all_down_since: Option<Instant>,
    warned: bool,
    gave_up: bool,
}

impl Recovering {
    pub(super) fn new(ran: &RanConfig, amf: String) -> Self {
        Recovering {
            links: vec![Link::Up; ran.associations() as usize],
            outages: Outages::default(),
            identity: ran.identity.clone(),
            gnb_id_base: ran.gnb_id_base,
            sctp_port: ran.sctp_port,
            amf,
            connect_timeout: ran.connect_timeout,
            all_down_since: None,
            warned: false,
            gave_up: false,
        }
    }

    /// Every gNB stayed down for the connect timeout: the run ends.
    pub(super) fn gave_up(&self) -> bool {
        self.gave_up
    }

    /// The outages, for the report.
    pub(super) fn take_outages(&mut self) -> Vec<Outage> {
        std::mem::take(&mut self.outages).into_report()
    }
}

/// What the first-contact wait should do now.
pub(super) struct FirstContact {
    /// Wake up by then at the latest.
    pub(super) wake: Option<Instant>,
    /// Stop waiting: no AMF answered within the connect timeout.
    pub(super) give_up: bool,
}

impl Runner {
    /// The UEs (by subscriber index) whose gNB is `gi`.
    pub(super) fn ues_on(&self, gi: usize) -> Vec<usize> {
        self.by_key
            .values()
            .copied()
            .filter(|&s| self.ues.get(s).is_some_and(|u| u.gnb == gi))
            .collect()
    }

    /// Whether any association has come up since the start (the AMF answered).
    fn answered(&self) -> bool {
        self.gnbs.iter().any(|g| g.ues.is_some() || g.ready)
    }

    /// During the first NG Setup (started at `start`): warns once when nothing has answered
    /// for [`NO_ANSWER_WARNING`], and says when to give up.
    pub(super) fn first_contact(&mut self, start: Instant, now: Instant) -> FirstContact {
        if self.answered() {
            return FirstContact {
                wake: None,
                give_up: false,
            };
        }
        let warn_at = start + NO_ANSWER_WARNING;
        if now >= warn_at && !self.recovery.warned {
            self.recovery.warned = true;
            tracing::warn!("{}", no_answer_message(&self.recovery.amf));
        }
        let give_up_at = start + self.recovery.connect_timeout;
        FirstContact {
            wake: Some(if self.recovery.warned {
                give_up_at
            } else {
                warn_at.min(give_up_at)
            }),
            give_up: now >= give_up_at,
        }
    }

    /// Why the gNBs still waiting for their first NG Setup failed.
    pub(super) fn first_contact_failure(&self, timeout: Duration) -> String {
        if self.answered() {
            format!("timeout after {timeout:?}")
        } else {
            no_answer_message(&self.recovery.amf)
        }
    }

    /// Whether gNB `gi` is being reconnected.
    pub(super) fn recovering(&self, gi: usize) -> bool {
        self.recovery.links.get(gi).is_some_and(Link::is_down)
    }

    /// Whether any gNB can take a UE now.
    pub(super) fn any_ready(&self) -> bool {
        self.gnbs.iter().any(|g| g.ready)
    }

    /// Puts UE `sub` where its next run starts: a UE with a 5G-GUTI goes to the AMF whose
    /// served GUAMI it names, else to another AMF of the same set (TS 23.501 §5.21.2.1:
    /// an AMF of the set takes over the UEs of one that is gone), preferring its own gNB;
    /// otherwise it stays on its gNB's association, or moves to a set-up one if that is
    /// down.
    pub(super) fn place(&mut self, sub: usize) {
        let Some(u) = self.ues.get(sub) else { return };
        if let Some(gi) = u.ue.guti().and_then(|g| self.by_guami(u.gnb, g)) {
            if let Some(u) = self.ues.get_mut(sub) {
                u.gnb = gi;
            }
            return;
        }
        if self.gnbs.get(u.gnb).is_some_and(|g| g.ready) {
            return;
        }
        let n = self.gnbs.len();
        let from = u.gnb;
        if let Some(gi) = (1..=n)
            .map(|k| (from + k) % n)
            .find(|&gi| self.gnbs.get(gi).is_some_and(|g| g.ready))
        {
            if let Some(u) = self.ues.get_mut(sub) {
                u.gnb = gi;
            }
        }
    }

    /// The set-up association for a UE of gNB association `from` holding `guti`: one to the
    /// AMF that allocated it, else one to an AMF of its set; the same gNB first.
    fn by_guami(&self, from: usize, guti: &proto::nas::Guti) -> Option<usize> {
        let served: Vec<Option<&[proto::ids::Guami]>> = self
            .gnbs
            .iter()
            .map(|g| match g.gnb.state() {
                crate::gnb::GnbState::Ready { guamis, .. } if g.ready => Some(guamis.as_slice()),
                _ => None,
            })
            .collect();
        pick_by_guami(&served, self.per_amf, from, guti)
    }

    /// The association of set-up gNB `gi` went down (`cause`): its UEs fail now and it
    /// starts reconnecting.
    pub(super) fn amf_lost(&mut self, gi: usize, cause: String, now: Instant) {
        let Some(g) = self.gnbs.get_mut(gi) else {
            return;
        };
        tracing::warn!(gnb = g.gnb_id, %cause, "AMF lost; reconnecting");
        g.ready = false;
        g.assoc = None;
        g.ues = None;
        g.backlog.clear();
        self.by_assoc.retain(|_, v| *v != gi);
        if let Some(l) = self.recovery.links.get_mut(gi) {
            *l = Link::lost(now, gi as u32);
        }
        self.recovery.outages.lost(now, self.t0, &cause);
        if !self.any_ready() && self.recovery.all_down_since.is_none() {
            self.recovery.all_down_since = Some(now);
        }
        for sub in self.ues_on(gi) {
            let Some(u) = self.ues.get(sub) else { continue };
            let doing = u.driver.as_ref().and_then(|d| {
                d.procedure()
                    .map(|p| p.name().to_owned())
                    .or_else(|| d.holding().map(|h| format!("held at {}", h.name())))
            });
            let supi = u.ue.config().supi.clone();
            // A UE at a barrier holds no slot: it takes one back to give it up.
            if let Some(i) = self.held.iter().position(|&s| s == sub) {
                self.held.remove(i);
                if i < self.to_release {
                    self.to_release -= 1;
                }
                self.sched.unpark();
            }
            if let Some(step) = self.feed(sub, now, Input::AmfLost) {
                self.exec_step(sub, step, now);
            }
            if let Some(doing) = doing {
                self.recovery
                    .outages
                    .ue_failed(now, &supi, &doing, AMF_LOST);
            }
        }
    }

    /// Starts the reconnections that are due, abandons those out of time, and gives up when
    /// no gNB has been up for the connect timeout.
    pub(super) fn poll_recovery(&mut self, now: Instant) {
        for gi in 0..self.recovery.links.len() {
            let Some(link) = self.recovery.links.get(gi).copied() else {
                continue;
            };
            if link.expired(now) {
                self.abandon_attempt(gi, now);
            } else if link.due(now) {
                self.reconnect(gi, now);
            }
        }
        let Some(since) = self.recovery.all_down_since else {
            return;
        };
        let down = now.saturating_duration_since(since);
        if down >= NO_ANSWER_WARNING && !self.recovery.warned {
            self.recovery.warned = true;
            tracing::warn!("{}", no_answer_message(&self.recovery.amf));
        }
        if down >= self.recovery.connect_timeout && !self.recovery.gave_up {
            self.recovery.gave_up = true;
            tracing::error!(
                "{}; giving up after {:?}",
                no_answer_message(&self.recovery.amf),
                self.recovery.connect_timeout
            );
        }
    }

    /// A new association for gNB `gi`, with a fresh gNB state for its NG Setup.
    fn reconnect(&mut self, gi: usize, now: Instant) {
        let key = gi as u32;
        let index = (gi % self.per_amf.max(1)) as u32;
        let gnb = self.recovery.identity.gnb(self.recovery.gnb_id_base, index);
        let Some(g) = self.gnbs.get_mut(gi) else {
            return;
        };
        let Some(link) = self.recovery.links.get_mut(gi) else {
            return;
        };
        link.start(now, key);
        self.recovery.outages.attempt();
        match gnb {
            Ok((_, gnb)) => g.gnb = gnb,
            Err(e) => {
                // The identity built this gNB once; it cannot fail now, but never panic.
                tracing::error!(error = %e, "gNB state");
                link.failed(now, key);
                return;
            }
        }
        g.started = now;
        g.failed = false;
        let local_port = LOCAL_PORT_BASE.saturating_add(gi as u16);
        let remote = self.remotes.get(g.amf).copied().unwrap_or(self.remotes[0]);
        match self
            .sock
            .endpoint_mut()
            .connect(now, remote, local_port, self.recovery.sctp_port)
        {
            Ok(id) => {
                g.assoc = Some(id);
                self.by_assoc.insert(id, gi);
                tracing::debug!(gnb = g.gnb_id, attempt = ?link, "reconnecting");
            }
            Err(e) => {
                tracing::debug!(gnb = g.gnb_id, error = %e, "reconnect");
                link.failed(now, key);
            }
        }
    }

    /// The attempt of gNB `gi` ran out of time: drop its association, back off.
    fn abandon_attempt(&mut self, gi: usize, now: Instant) {
        let id: Option<AssocId> = self.gnbs.get_mut(gi).and_then(|g| {
            g.ues = None;
            g.assoc.take()
        });
        if let Some(id) = id {
            self.by_assoc.remove(&id);
            // Its Closed event finds no gNB any more.
            let _ = self.sock.endpoint_mut().abort(now, id);
        }
        if let Some(l) = self.recovery.links.get_mut(gi) {
            l.failed(now, gi as u32);
        }
    }

    /// The association of reconnecting gNB `gi` closed before NG Setup was done.
    pub(super) fn reconnect_closed(&mut self, gi: usize, now: Instant) {
        if let Some(g) = self.gnbs.get_mut(gi) {
            g.assoc = None;
            g.ues = None;
        }
        self.by_assoc.retain(|_, v| *v != gi);
        if let Some(l) = self.recovery.links.get_mut(gi) {
            l.failed(now, gi as u32);
        }
    }

    /// An NGAP message for reconnecting gNB `gi` before its NG Setup is done.
    pub(super) fn reconnect_ngap(&mut self, gi: usize, stream: u16, data: &[u8], now: Instant) {
        let Some(g) = self.gnbs.get_mut(gi) else {
            return;
        };
        match g.gnb.handle(stream, data) {
            GnbEvent::SetupOk => {
                g.ready = true;
                tracing::info!(gnb = g.gnb_id, "NG Setup done again");
                if let Some(l) = self.recovery.links.get_mut(gi) {
                    l.up();
                }
                self.recovery.all_down_since = None;
                self.recovery.warned = false;
                let all_up = !self.recovery.links.iter().any(Link::is_down);
                self.recovery.outages.recovered(now, all_up);
            }
            GnbEvent::SetupFailed { cause, .. } => {
                // TS 38.413 §8.7.1.3: the AMF refused (it may be overloaded); try again later.
                tracing::info!(gnb = g.gnb_id, %cause, "NG Setup Failure while reconnecting");
                let id = g.assoc.take();
                g.ues = None;
                if let Some(id) = id {
                    self.by_assoc.remove(&id);
                    let _ = self.sock.endpoint_mut().abort(now, id);
                }
                if let Some(l) = self.recovery.links.get_mut(gi) {
                    l.failed(now, gi as u32);
                }
            }
            other => {
                tracing::debug!(gnb = g.gnb_id, event = ?other, "NGAP message during NG Setup");
            }
        }
        self.drain_gnb(gi);
    }
}

/// TS 23.501 §5.21.2: among associations (`served[gi]`: the GUAMIs of a set-up association,
/// `None` for one that is down; association `gi` belongs to gNB `gi % per_amf`), the one a UE
/// of association `from` holding `guti` goes to: the AMF that allocated the 5G-GUTI (region,
/// set and pointer), else another AMF of its set (region and set); the same gNB first.
fn pick_by_guami(
    served: &[Option<&[proto::ids::Guami]>],
    per_amf: usize,
    from: usize,
    guti: &proto::nas::Guti,
) -> Option<usize> {
    let per = per_amf.max(1);
    let own = from % per;
    let serves = |gi: usize, pointer: bool| {
        served.get(gi).copied().flatten().is_some_and(|guamis| {
            guamis.iter().any(|q| {
                q.amf_region_id == guti.amf_region
                    && q.amf_set_id == guti.amf_set
                    && (!pointer || q.amf_pointer == guti.amf_pointer)
            })
        })
    };
    let order: Vec<usize> = (0..served.len())
        .filter(|gi| gi % per == own)
        .chain((0..served.len()).filter(|gi| gi % per != own))
        .collect();
    order
        .iter()
        .copied()
        .find(|&gi| serves(gi, true))
        .or_else(|| order.iter().copied().find(|&gi| serves(gi, false)))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::pick_by_guami;
    use proto::ids::{Guami, Plmn};
    use proto::nas::Guti;

    #[test]
    fn a_returning_ue_goes_to_its_amf_then_to_its_set() {
        let plmn = Plmn::new("001", "01").unwrap();
        let amf = |set: u16, pointer: u8| Guami::new(plmn, 2, set, pointer).unwrap();
        let (a1, a2, other) = ([amf(1, 1)], [amf(1, 2)], [amf(7, 1)]);
        let guti = Guti {
            plmn,
            amf_region: 2,
            amf_set: 1,
            amf_pointer: 2,
            tmsi: 0x0100_0001,
        };
        // Two gNBs per AMF: associations 0, 1 to AMF 1; 2, 3 to AMF 2; 4, 5 to another set.
        let all: Vec<Option<&[Guami]>> = vec![
            Some(&a1[..]),
            Some(&a1[..]),
            Some(&a2[..]),
            Some(&a2[..]),
            Some(&other[..]),
            Some(&other[..]),
        ];
        // Its own AMF (pointer 2), on the UE's own gNB (1, as association 1 is).
        assert_eq!(pick_by_guami(&all, 2, 1, &guti), Some(3));
        assert_eq!(pick_by_guami(&all, 2, 0, &guti), Some(2));
        // That AMF gone: another of the set, never another set.
        let mut down = all.clone();
        down[2] = None;
        down[3] = None;
        assert_eq!(pick_by_guami(&down, 2, 1, &guti), Some(1));
        down[0] = None;
        down[1] = None;
        assert_eq!(pick_by_guami(&down, 2, 1, &guti), None);
    }
}
