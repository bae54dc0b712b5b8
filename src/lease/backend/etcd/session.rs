//! The connection an etcd registry calls through: a member, the next one
//! after a failure, logged in once for every member the cluster lets a
//! token reach.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::{Value, json};

use super::super::remote::{Connected, Failure};
use super::super::{Source, said};
use super::EtcdRegistry;
use super::gateway::{self, Answer, Gateway, Txn, number};
use crate::lease::LeaseError;

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
        if matches!(result, Err(Failure::Client(_) | Failure::TimedOut(_))) {
            // The next call starts at the next member.
            self.next.fetch_add(1, Ordering::Relaxed);
        }
        if let Err(Failure::TimedOut(_)) = result {
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
    /// [`PROBE_TIME`]: super::super::probe::PROBE_TIME
    fn leaderless(&self) -> Option<Source> {
        use super::super::probe::PROBE_TIME;
        let asked = self.remote.probe(PROBE_TIME + PROBE_TIME / 4, async {
            let mut members = tokio::task::JoinSet::new();
            for endpoint in &self.endpoints {
                let (endpoint, tls) = (endpoint.clone(), self.tls.clone());
                members.spawn(tokio::time::timeout(PROBE_TIME, async move {
                    let mut member = Gateway::connect(&endpoint, tls.as_ref()).await?;
                    member.call("/v3/maintenance/status", &json!({})).await
                }));
            }
            let mut answered = 0;
            while let Some(joined) = members.join_next().await {
                if let Ok(Ok(Ok(status))) = joined {
                    if number(&status["leader"]).unwrap_or(0) != 0 {
                        return None;
                    }
                    answered += 1;
                }
            }
            // None answering is a cluster out of reach, not one without a
            // leader.
            (answered > 0).then_some(answered)
        });
        let answered = asked.flatten()?;
        Some(said(format!(
            "no leader: {answered} of the {} members the URL names answer, none with a leader",
            self.endpoints.len()
        )))
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
        let token = gateway.authenticate(user, password).await?;
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

/// Whether `token` is a signed one (a JWT: header, claims and signature),
/// not one of etcd's default tokens (`<random>.<raft index>`).
fn signed(token: &str) -> bool {
    token.split('.').count() == 3
}

/// A token shared by the connections of one registry.
pub(super) type Token = std::sync::Mutex<Option<Arc<str>>>;
