//! What a Kubernetes registry shows an operator: a namespace's records, the
//! verbs its token may use on Leases (asked of the server itself, which
//! needs no right), the server's version, and a reading of its clock.

use std::collections::BTreeSet;

use serde_json::json;

use super::super::inspect::{
    Caveat, Inspect, Listing, ServerClock, Severity, Survey, Transport, Verified,
};
use super::objects::{self, MANAGED_BY};
use super::{KubernetesRegistry, now_ms};
use crate::lease::backend::LeaseError;

/// The verbs leasing uses on Leases, as the guide's Role grants them.
const VERBS: [&str; 5] = ["get", "list", "create", "update", "delete"];

impl Inspect for KubernetesRegistry {
    fn list(&self, namespace: &str) -> Result<Listing, LeaseError> {
        let names = self.names(namespace)?;
        // No objects is an empty listing: Leases need no table, so a
        // namespace never used and one emptied look alike.
        let (marker, filed) = self.objects(&names)?;
        let in_force = self.judge(namespace, marker.as_ref(), &filed);
        let mut records = self.records_under(in_force.as_ref(), filed);
        records.sort_by_key(|r| r.worker);
        Ok(Listing {
            server_unix_millis: now_ms(),
            marker_unix_millis: in_force.as_ref().map(|m| m.marker_unix_millis),
            high_water: in_force.map_or(0, |m| m.high_water),
            records,
        })
    }

    fn namespaces(&self) -> Result<Vec<String>, LeaseError> {
        let path = format!(
            "{}?labelSelector={}%3D{}",
            self.leases(),
            MANAGED_BY.0.replace('/', "%2F"),
            MANAGED_BY.1
        );
        let reply = self.request("GET", &path, None)?;
        if reply.status != 200 {
            return Err(self.refused("list", &reply));
        }
        let all: BTreeSet<String> = reply.body["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|item| {
                item["metadata"]["annotations"][objects::NAMESPACE_ANNOTATION].as_str()
            })
            .map(str::to_owned)
            .collect();
        Ok(all.into_iter().collect())
    }

    fn survey(&self) -> Result<Survey, LeaseError> {
        let mut caveats = Vec::new();
        let before = now_ms();
        let version = self.request("GET", "/version", None)?;
        let after = now_ms();
        if version.status == 200 {
            caveats.push(Caveat {
                topic: "topology",
                setting: format!(
                    "Kubernetes {}, Leases in the namespace {}",
                    version.body["gitVersion"]
                        .as_str()
                        .unwrap_or("of an unknown version"),
                    self.namespace
                ),
                severity: Severity::Note,
                advice: "an etcd restore under the API server is seen by a generator that \
                         saw a later version of its Lease; one nobody saw is not: restore \
                         with the API servers stopped for longer than the TTL and the skew \
                         allowance, or turn on Lease::wait_out_rollbacks"
                    .to_owned(),
            });
        }
        // The token's rights, asked of the server as that token: a
        // SelfSubjectAccessReview needs none.
        let mut missing = Vec::new();
        for verb in VERBS {
            let review = json!({
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SelfSubjectAccessReview",
                "spec": { "resourceAttributes": {
                    "namespace": self.namespace,
                    "verb": verb,
                    "group": "coordination.k8s.io",
                    "resource": "leases",
                }},
            });
            let reply = self.request(
                "POST",
                "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                Some(&review),
            )?;
            if reply.status != 201 && reply.status != 200 {
                return Err(self.refused("create selfsubjectaccessreviews for", &reply));
            }
            if reply.body["status"]["allowed"].as_bool() != Some(true) {
                missing.push(verb);
            }
        }
        caveats.push(if missing.is_empty() {
            Caveat {
                topic: "access",
                setting: format!(
                    "the token may {} leases in {}",
                    VERBS.join(", "),
                    self.namespace
                ),
                severity: Severity::Note,
                advice: "all leasing needs, nothing more is asked".to_owned(),
            }
        } else {
            Caveat {
                topic: "access",
                setting: format!(
                    "the token may not {} leases in {}",
                    missing.join(", "),
                    self.namespace
                ),
                severity: Severity::Danger,
                advice: "generators will fail: bind the token's service account to a Role \
                         that allows get, list, create, update and delete on leases \
                         (coordination.k8s.io) in this namespace, as flakegen's Kubernetes \
                         guide shows"
                    .to_owned(),
            }
        });
        let survey = Survey::new(Transport::Tls(Verified::Full), caveats);
        // The server's clock, to the second (its Date header): leasing
        // judges expiry by the hosts' clocks, which a tool checks against it.
        Ok(match version.date.as_deref().and_then(http_date_millis) {
            Some(unix_millis) => survey.with_clock(ServerClock {
                unix_millis,
                resolution_millis: 1_000,
                before_unix_millis: before,
                after_unix_millis: after,
            }),
            None => survey,
        })
    }
}

/// An HTTP date (`Sun, 06 Dec 2026 05:27:26 GMT`) in ms since 1970.
pub(super) fn http_date_millis(date: &str) -> Option<u64> {
    let mut parts = date.split_whitespace().skip(1);
    let day: u64 = parts.next()?.parse().ok()?;
    let month = parts.next()?;
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .iter()
    .position(|m| *m == month)? as u64
        + 1;
    let year: u64 = parts.next()?.parse().ok()?;
    let mut hms = parts.next()?.split(':').map(|p| p.parse::<u64>().ok());
    let (h, m, s) = (hms.next()??, hms.next()??, hms.next()??);
    // Days since 1970 from a civil date (Howard Hinnant's algorithm).
    let (y, mo) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y / 400;
    let year_of_era = y % 400;
    let day_of_year = (153 * mo + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = (era * 146_097 + day_of_era).checked_sub(719_468)?;
    Some(((days * 24 + h) * 60 + m) * 60_000 + s * 1_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_http_date_reads_as_ms_since_1970() {
        assert_eq!(
            http_date_millis("Sun, 06 Dec 2026 05:27:26 GMT"),
            Some(1_796_534_846_000)
        );
        assert_eq!(http_date_millis("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(
            http_date_millis("Tue, 29 Feb 2000 12:00:01 GMT"),
            Some(951_825_601_000)
        );
        assert_eq!(http_date_millis("yesterday"), None);
    }
}
