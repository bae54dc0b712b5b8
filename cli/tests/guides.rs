//! The commands the crate's guide pages give (`flakegen::guide`) are this
//! command's: each names subcommands it has and flags those take, so
//! that a reader who follows a page at 3 a.m. is not told to run a
//! command that does not exist.

use std::process::Command;

/// Every `flakegen …` command in backticks in the guide pages.
fn commands() -> Vec<String> {
    let guides = include_str!("../../src/guide.rs");
    let mut found = Vec::new();
    for span in guides.split('`').skip(1).step_by(2) {
        if let Some(command) = span.strip_prefix("flakegen ") {
            found.push(command.to_owned());
        }
    }
    found
}

#[test]
fn every_command_of_the_guides_is_one_the_cli_has() {
    let commands = commands();
    assert!(
        commands.iter().any(|c| c.starts_with("leases init")),
        "the guides name no `flakegen leases init` (found {commands:?})"
    );
    for command in &commands {
        // The words before the first argument: the subcommands.
        let words: Vec<&str> = command
            .split_whitespace()
            .take_while(|w| w.chars().all(|c| c.is_ascii_lowercase()))
            .collect();
        let help = Command::new(env!("CARGO_BIN_EXE_flakegen"))
            .args(&words)
            .arg("--help")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&help.stdout);
        assert!(
            help.status.success(),
            "`flakegen {command}`: no such command"
        );
        for flag in command.split_whitespace().filter(|w| w.starts_with("--")) {
            assert!(
                text.contains(flag),
                "`flakegen {command}`: {flag} is not a flag of `flakegen {}`",
                words.join(" ")
            );
        }
    }
}
