//! `flakegen layout`: what a layout holds, and until when.

use flakegen::Layout;

use crate::Failed;
use crate::show;

/// A layout's fields, capacity and end date.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// Layouts: twitter, discord, sonyflake, instagram or javascript, or a custom
    /// layout's fields (worker_bits=8,sequence_bits=14,...).
    #[arg(default_value = "twitter")]
    layouts: Vec<Layout>,
    /// One JSON object per layout, one per line.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: &Args) -> Result<(), Failed> {
    let now = show::unix_millis(std::time::SystemTime::now());
    let mut spent = Vec::new();
    for layout in &args.layouts {
        let end = show::unix_millis(layout.exhausted_at());
        if end <= now {
            spent.push(format!(
                "layout {layout} can issue no ID: its timestamps ran out at {}; choose an \
                 epoch nearer now (epoch_unix_millis=...) or more timestamp bits",
                show::time(end)
            ));
        }
        let epoch = layout.epoch_unix_millis();
        let unit = layout.unit();
        if args.json {
            let object = serde_json::json!({
                "layout": layout.to_string(),
                "timestamp_bits": layout.timestamp_bits(),
                "worker_bits": layout.worker_bits(),
                "sequence_bits": layout.sequence_bits(),
                "unit_ns": u64::try_from(unit.as_nanos()).unwrap_or(u64::MAX),
                "epoch": show::time(epoch),
                "end": show::time(end),
                "end_unix_ms": end,
                "workers": layout.max_worker() + 1,
                "ids_per_unit": layout.ids_per_unit(),
                "ids_per_second": layout.ids_per_second(),
            });
            say!("{object}");
            continue;
        }
        say!("{layout}");
        say!(
            "  fields     {} timestamp, {} worker, {} sequence bits ({:?})",
            layout.timestamp_bits(),
            layout.worker_bits(),
            layout.sequence_bits(),
            layout.field_order()
        );
        say!(
            "  unit       {unit:?}, from the epoch {}",
            show::time(epoch)
        );
        say!(
            "  workers    {} (ids 0..={})",
            layout.max_worker() + 1,
            layout.max_worker()
        );
        say!(
            "  capacity   {} IDs per unit, {} per second, per worker",
            layout.ids_per_unit(),
            layout.ids_per_second()
        );
        let left = if end > now {
            format!(
                "{:.1} years from now",
                (end - now) as f64 / 31_557_600_000.0
            )
        } else {
            "already passed: no ID can be issued".to_owned()
        };
        say!("  ends       {} ({left})", show::time(end));
    }
    if spent.is_empty() {
        Ok(())
    } else {
        Err(Failed::work(Some(spent.join("\nerror: "))))
    }
}
