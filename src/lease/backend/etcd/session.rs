//! The connection an etcd registry calls through: a member, the next one
//! after a failure, logged in once for every member the cluster lets a
//! token reach.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::Poll;

use serde_json::{Value, json};

use super::super::client::budget;
use super::super::client::remote::{Connected, Failure};
use super::super::{Source, said};
use super::EtcdRegistry;
use super::gateway::{self, Answer, Gateway, Txn, number};
use crate::lease::backend::LeaseError;

impl EtcdRegistry {
    /// Runs `call` with a connection to a member, opening one first if need
    /// be: each member in turn from the one after the last that failed.
    pub(super) fn run<T, F>(&self, call: impl FnOnce(Gateway) -> F + Send) -> Result<T, LeaseError>
    where
        T: Send,
        F: Future<Output = (Gateway, Result<T, Failure<gateway::Error>>)> + Send,
    {
        let open = || async move {
            Ok(Connected {
                client: self.open_any().await?,
                driver: None,
            })
        };
        let result = self.remote.run(open, call);
        if matches!(
            result,
            Err(Failure::Client(_) | Failure::TimedOut { .. } | Failure::TooSlow(_))
        ) {
            // The next call starts at the next member.
            self.next.fetch_add(1, Ordering::Relaxed);
        }
        let timed_out = match &result {
            Err(Failure::TimedOut { .. } | Failure::TooSlow(_)) => true,
            Err(Failure::Client(gateway::Error::Io(e))) => e.kind() == std::io::ErrorKind::TimedOut,
            Err(Failure::Client(gateway::Error::Unanswered)) => true,
            _ => false,
        };
        if timed_out {
            // A member without a leader holds a request until one is
            // elected: its status, which needs none, tells that apart from
            // a member that is gone.
            if let Some(said) = self.leaderless() {
                return Err(LeaseError::NoQuorum {
                    address: self.remote.address.clone(),
                    source: said,
                });
            }
        }
        result.map_err(|failure| failure.into_lease(&self.remote.address, |e| self.error(e)))
    }

    /// What the members that answer at once say, if none knows a leader.
    /// All are asked at once, each for at most [`PROBE_TIME`], so that the
    /// question adds one `PROBE_TIME` to the call's timeout however many
    /// members are gone.
    ///
    /// [`PROBE_TIME`]: super::super::client::probe::PROBE_TIME
    fn leaderless(&self) -> Option<Source> {
        let asked = self.remote.probe(LEADER_PROBE, self.leader());
        match asked.flatten()? {
            Leader::Known => None,
            Leader::None { answered } => Some(said(self.no_leader(answered))),
        }
    }

    fn no_leader(&self, answered: usize) -> String {
        format!(
            "no leader: {answered} of the {} members the URL names answer, none with a leader",
            self.endpoints.len()
        )
    }

    /// Ok if the member at `endpoint` answers a status request at once,
    /// and some member knows a leader: busy, not gone, nor cut off. Else an
    /// error that moves the call to the next member, or, when no member
    /// answers or none knows a leader, ends it as a call without one would.
    async fn busy(&self, endpoint: &str) -> Result<(), gateway::Error> {
        use super::super::client::probe::PROBE_TIME;
        let statuses = self.statuses(PROBE_TIME).await;
        let known: Vec<u64> = statuses.iter().filter_map(|(_, leader)| *leader).collect();
        let mine = statuses.iter().find(|(member, _)| *member == endpoint);
        if known.is_empty() {
            return Err(gateway::Error::Unanswered);
        }
        if known.iter().all(|&leader| leader == 0) {
            return Err(gateway::Error::Status {
                code: gateway::code::UNAVAILABLE,
                message: self.no_leader(known.len()),
            });
        }
        match mine {
            Some((_, Some(_))) => Ok(()),
            _ => Err(gateway::Error::Io(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the member answers neither the login nor a status request",
            ))),
        }
    }

    /// Whether the members that answer at once know a leader; `None` if
    /// none answers (a cluster out of reach, not one without a leader).
    async fn leader(&self) -> Option<Leader> {
        use super::super::client::probe::PROBE_TIME;
        let statuses = self.statuses(PROBE_TIME).await;
        let known: Vec<u64> = statuses.iter().filter_map(|(_, leader)| *leader).collect();
        if known.iter().any(|&leader| leader != 0) {
            Some(Leader::Known)
        } else {
            (!known.is_empty()).then_some(Leader::None {
                answered: known.len(),
            })
        }
    }

    /// Every member's status, all asked at once, each within `within`: the
    /// leader it knows (0: none), or `None` if it did not answer.
    async fn statuses(&self, within: std::time::Duration) -> Vec<(&str, Option<u64>)> {
        let mut members = tokio::task::JoinSet::new();
        for (i, endpoint) in self.endpoints.iter().enumerate() {
            let (endpoint, tls) = (endpoint.clone(), self.tls.clone());
            members.spawn(async move {
                let status = tokio::time::timeout(within, async move {
                    let mut member = Gateway::connect(&endpoint, tls.as_ref()).await?;
                    member.call("/v3/maintenance/status", &json!({})).await
                });
                let leader = match status.await {
                    Ok(Ok(status)) => Some(number(&status["leader"]).unwrap_or(0)),
                    _ => None,
                };
                (i, leader)
            });
        }
        let mut statuses: Vec<(&str, Option<u64>)> =
            self.endpoints.iter().map(|e| (e.as_str(), None)).collect();
        while let Some(joined) = members.join_next().await {
            if let Ok((i, leader)) = joined {
                statuses[i].1 = leader;
            }
        }
        statuses
    }

    /// A connection to the first member that takes one, from the one after
    /// the last that failed.
    pub(super) async fn open_any(&self) -> Result<Gateway, gateway::Error> {
        let first = self.next.fetch_add(1, Ordering::Relaxed);
        let mut last = None;
        for i in 0..self.endpoints.len() {
            let endpoint = &self.endpoints[(first + i) % self.endpoints.len()];
            match self.open(endpoint).await {
                Ok(gateway) => return Ok(gateway),
                // A refusal of the credentials, or of TLS, is the same at
                // every member.
                Err(e @ (gateway::Error::Status { .. } | gateway::Error::Tls(_))) => {
                    return Err(e);
                }
                // None answers: the next would fare no better.
                Err(e @ gateway::Error::Unanswered) => return Err(e),
                Err(e) => last = Some(e),
            }
        }
        Err(last.expect("an etcd URL names at least one member"))
    }

    /// A connection to `endpoint`, logged in. A login costs the member a
    /// password hash (bcrypt: hundreds of ms on a busy machine, and logins
    /// queue), so a new connection carries the token the last login got
    /// where the cluster signs its tokens (`--auth-token jwt`): any member
    /// checks one by its signature alone, whatever happened to the cluster
    /// since. etcd's default tokens are not reused: a member holds a request
    /// with one until its raft log reaches the index the token names, which
    /// after a restore from a snapshot it may never do.
    pub(super) async fn open(&self, endpoint: &str) -> Result<Gateway, gateway::Error> {
        let mut gateway = Gateway::connect(endpoint, self.tls.as_ref()).await?;
        if let Some((user, password)) = &self.credentials {
            let known = self.token.lock().unwrap_or_else(|e| e.into_inner()).clone();
            match known.filter(|token| signed(token)) {
                Some(token) => gateway.token = Some(token),
                None => self.log_in(&mut gateway, user, password).await?,
            }
        }
        Ok(gateway)
    }

    async fn log_in(
        &self,
        gateway: &mut Gateway,
        user: &str,
        password: &str,
    ) -> Result<(), gateway::Error> {
        // Logins at once queue on the members' CPU (each hashes the
        // password), past a call's bound, and one may be refused as not
        // committed in time. While the member answers and knows a leader,
        // that is a busy member, not a gone one nor a cluster out of
        // quorum: the login goes on, or is asked again, within the
        // opening's longer bound (`LOGIN_ALLOWANCE`). Else it fails as a
        // call that timed out would.
        let endpoint = gateway.endpoint().to_owned();
        // Until the call's own bound, less the time a probe takes: a
        // cluster that is gone costs that bound, no more.
        let patience = budget::timeout(true).saturating_sub(LEADER_PROBE);
        let token = loop {
            let login = gateway.authenticate(user, password);
            tokio::pin!(login);
            let answer = match tokio::time::timeout(patience, &mut login).await {
                Ok(answer) => answer,
                Err(_) => {
                    // The login goes on while the member is asked.
                    let probe = self.busy(&endpoint);
                    tokio::pin!(probe);
                    let mut busy = false;
                    std::future::poll_fn(|cx| {
                        if let Poll::Ready(answer) = login.as_mut().poll(cx) {
                            return Poll::Ready(Ok(answer));
                        }
                        if !busy {
                            match probe.as_mut().poll(cx) {
                                Poll::Ready(Ok(())) => busy = true,
                                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                                Poll::Pending => {}
                            }
                        }
                        Poll::Pending
                    })
                    .await?
                }
            };
            match answer {
                Err(gateway::Error::Status {
                    code: gateway::code::UNAVAILABLE,
                    ..
                }) => {
                    // Not committed in time, or a new leader meanwhile.
                    self.busy(&endpoint).await?;
                    tokio::time::sleep(RETRY_PAUSE).await;
                }
                answer => break answer?,
            }
        };
        *self.token.lock().unwrap_or_else(|e| e.into_inner()) = Some(token);
        Ok(())
    }

    /// Posts `body` to `path` on a connection: a token the member refuses
    /// (expired, or issued by another member) is replaced by a login, once.
    pub(super) async fn call(
        &self,
        gateway: &mut Gateway,
        path: &str,
        body: &Value,
    ) -> Result<Value, gateway::Error> {
        match gateway.call(path, body).await {
            Err(gateway::Error::Status { message, .. })
                if message.contains("invalid auth token") && self.credentials.is_some() =>
            {
                let (user, password) = self.credentials.as_ref().expect("checked");
                self.log_in(gateway, user, password).await?;
                gateway.call(path, body).await
            }
            answer => answer,
        }
    }

    /// Runs one transaction.
    pub(super) fn txn(&self, txn: &Txn) -> Result<Answer, LeaseError> {
        let body = txn.body();
        let value = self.run(|mut gateway| async move {
            let mut answer = self.call(&mut gateway, "/v3/kv/txn", &body).await;
            // A read interrupted by a new leader (a busy cluster elects
            // one now and then) is asked again: it changed nothing.
            let interrupted = |answer: &Result<Value, gateway::Error>| {
                matches!(answer, Err(gateway::Error::Status { message, .. })
                    if message.contains("leader changed"))
            };
            if txn.reads_only() && interrupted(&answer) {
                tokio::time::sleep(RETRY_PAUSE).await;
                answer = self.call(&mut gateway, "/v3/kv/txn", &body).await;
            }
            if let Err(gateway::Error::Stale) = answer {
                // Nothing was sent: the request goes on a new connection.
                match self.open_any().await {
                    Ok(fresh) => {
                        gateway = fresh;
                        answer = self.call(&mut gateway, "/v3/kv/txn", &body).await;
                    }
                    Err(e) => answer = Err(e),
                }
            }
            (gateway, answer.map_err(Failure::Client))
        })?;
        Ok(Answer::of(value))
    }

    /// The keys a range of `answer` found: what the registry cannot read
    /// is a corrupt record.
    pub(super) fn kvs(
        &self,
        answer: &Answer,
        get: gateway::Get,
    ) -> Result<Vec<gateway::Kv>, LeaseError> {
        answer.kvs(get).map_err(|detail| self.corrupt(detail))
    }

    /// The one key a `get` of `answer` found, if any.
    pub(super) fn kv(
        &self,
        answer: &Answer,
        get: gateway::Get,
    ) -> Result<Option<gateway::Kv>, LeaseError> {
        answer.kv(get).map_err(|detail| self.corrupt(detail))
    }
}

/// The pause before a login the member could not commit in time, or a read
/// a new leader interrupted, is asked again.
const RETRY_PAUSE: std::time::Duration = std::time::Duration::from_millis(100);

/// How long asking every member for its leader may take.
const LEADER_PROBE: std::time::Duration = {
    use super::super::client::probe::PROBE_TIME;
    PROBE_TIME.saturating_add(PROBE_TIME.checked_div(4).expect("4 is not 0"))
};

/// What the members that answered say of a leader.
enum Leader {
    Known,
    None { answered: usize },
}

/// Whether `token` is a signed one (a JWT: header, claims and signature),
/// not one of etcd's default tokens (`<random>.<raft index>`).
fn signed(token: &str) -> bool {
    token.split('.').count() == 3
}

/// A token shared by the connections of one registry.
pub(super) type Token = std::sync::Mutex<Option<Arc<str>>>;
