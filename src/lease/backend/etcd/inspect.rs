//! What an etcd registry shows an operator: a namespace's records, and
//! the cluster's members, leader and term.

use serde_json::{Value, json};

use super::super::client::remote::Failure;
use super::super::client::url::percent_decode;
use super::super::inspect::{Caveat, Inspect, Listing, Severity, Survey, Transport, Verified};
use super::gateway::{Txn, number};
use super::{EtcdRegistry, now_ms};
use crate::lease::backend::LeaseError;

/// How many records a listing reads per transaction.
const PAGE: u64 = 1_000;

impl Inspect for EtcdRegistry {
    fn list(&self, namespace: &str) -> Result<Listing, LeaseError> {
        let keys = self.keys(namespace)?;
        let mut txn = Txn::new();
        let head_gets = Self::head_gets(&mut txn, &keys);
        let answer = self.txn(&txn)?;
        let head = self.head(&answer, &head_gets)?;
        if head.epoch.is_none() && head.witness.is_none() {
            return Err(LeaseError::NoLeases {
                address: self.remote.address.clone(),
            });
        }
        let mut records = Vec::new();
        let mut from = None::<String>;
        loop {
            let mut txn = Txn::new();
            // Past the last key read: a NUL sorts just after it.
            let start = from.as_ref().map(|key| format!("{key}\0"));
            let page = txn.scan(&keys.records(), start.as_deref(), PAGE, false);
            let kvs = self.kvs(&self.txn(&txn)?, page)?;
            for kv in &kvs {
                records.push(self.record_of(kv)?);
            }
            match kvs.last() {
                Some(kv) if kvs.len() as u64 == PAGE => from = Some(kv.key.clone()),
                _ => break,
            }
        }
        let mark = head.in_force();
        Ok(Listing {
            server_unix_millis: now_ms(),
            marker_unix_millis: mark.map(|m| m.marker),
            high_water: mark.map_or(0, |m| m.high_water),
            records,
        })
    }

    fn namespaces(&self) -> Result<Vec<String>, LeaseError> {
        let names = format!("{}/names/", self.prefix);
        let mut txn = Txn::new();
        let all = txn.scan(&names, None, 0, true);
        let mut namespaces = self
            .kvs(&self.txn(&txn)?, all)?
            .into_iter()
            .filter_map(|kv| kv.key.strip_prefix(&names).and_then(percent_decode))
            .collect::<Vec<_>>();
        namespaces.sort();
        Ok(namespaces)
    }

    fn survey(&self) -> Result<Survey, LeaseError> {
        let endpoints = self.endpoints.clone();
        // Each member the URL names, asked on a connection of its own.
        let statuses: Vec<(String, Result<Value, String>)> =
            self.run(|mut gateway| async move {
                let members = self
                    .call(&mut gateway, "/v3/cluster/member/list", &json!({}))
                    .await;
                let mut statuses = Vec::new();
                for endpoint in &endpoints {
                    let status = async {
                        let mut member = self.open(endpoint).await?;
                        self.call(&mut member, "/v3/maintenance/status", &json!({}))
                            .await
                    }
                    .await
                    .map_err(|e| e.to_string());
                    statuses.push((endpoint.clone(), status));
                }
                let members = members.map(|m| {
                    let mut all = vec![("members".to_owned(), Ok(m))];
                    all.extend(statuses);
                    all
                });
                (gateway, members.map_err(Failure::Client))
            })?;
        let transport = match self.tls {
            Some(_) => Transport::Tls(Verified::Full),
            None => Transport::Plain,
        };
        let mut caveats = Vec::new();
        let names: Vec<String> = statuses[0]
            .1
            .as_ref()
            .ok()
            .and_then(|m| m["members"].as_array())
            .map(|members| {
                members
                    .iter()
                    .map(|m| m["name"].as_str().unwrap_or("(unnamed)").to_owned())
                    .collect()
            })
            .unwrap_or_default();
        let mut indexes = Vec::new();
        let mut down = Vec::new();
        let mut leader = None;
        let mut term = 0;
        for (endpoint, status) in &statuses[1..] {
            match status {
                Ok(status) => {
                    indexes.push((endpoint.clone(), number(&status["raftIndex"]).unwrap_or(0)));
                    term = term.max(number(&status["raftTerm"]).unwrap_or(0));
                    if number(&status["leader"]) == number(&status["header"]["member_id"]) {
                        leader = Some(endpoint.clone());
                    }
                }
                Err(e) => down.push(format!("{endpoint} ({e})")),
            }
        }
        let majority = names.len() / 2 + 1;
        caveats.push(Caveat {
            topic: "topology",
            setting: format!(
                "{} members ({}), leader at {}, raft term {term}",
                names.len(),
                names.join(", "),
                leader.as_deref().unwrap_or("none the URL names"),
            ),
            severity: Severity::Note,
            advice: format!(
                "a consensus store: while {majority} of {} members stand, a member or a leader \
                 lost costs generators nothing; a restore from a snapshot is a detected loss \
                 (generators wait the TTL and the skew allowance)",
                names.len()
            ),
        });
        if !down.is_empty() {
            caveats.push(Caveat {
                topic: "topology",
                setting: format!(
                    "members the URL names that did not answer: {}",
                    down.join(", ")
                ),
                severity: Severity::Warning,
                advice: "generators use the others; one more member lost may cost the cluster its \
                         quorum, and generators then refuse once their fences pass: bring it back"
                    .to_owned(),
            });
        }
        if let Some(&(_, top)) = indexes.iter().max_by_key(|(_, index)| *index) {
            for (endpoint, index) in &indexes {
                if top - index > 1_000 {
                    caveats.push(Caveat {
                        topic: "topology",
                        setting: format!("{endpoint} is {} raft entries behind", top - index),
                        severity: Severity::Warning,
                        advice: "a member that falls behind cannot stand in for the leader: \
                                 check its disk and network"
                            .to_owned(),
                    });
                }
            }
        }
        if term <= 2 {
            caveats.push(Caveat {
                topic: "durability",
                setting: format!("raft term {term}: no leader change since the cluster began"),
                severity: Severity::Warning,
                advice: "a restore of a snapshot taken now would not be detected unless it gives \
                         the cluster a new id (a new --initial-cluster-token): restore with a new \
                         token, or let the leader change once (etcdctl move-leader)"
                    .to_owned(),
            });
        }
        Ok(Survey::new(transport, caveats))
    }
}
