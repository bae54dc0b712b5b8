//! The capabilities `suite!` takes, as its docs list them: each one the
//! macro knows (its arms) is named in the docs' list and in the example
//! that names them all, so that a new capability cannot go unsaid (the
//! `marker` capability did).

#[test]
fn the_docs_name_every_capability_the_suite_takes() {
    let source = include_str!("../src/lib.rs");
    let arms = &source[source.find("macro_rules! __capability").unwrap()..];
    let mut known: Vec<&str> = arms
        .lines()
        .filter_map(|line| {
            let arm = line.trim().strip_prefix("(Server, ")?;
            let name = arm.split(')').next()?;
            name.chars().all(|c| c.is_ascii_lowercase()).then_some(name)
        })
        .collect();
    known.sort_unstable();
    known.dedup();
    assert!(known.len() >= 5, "the capabilities found: {known:?}");
    let said = &source[source.find("/// The capabilities:").unwrap()..];
    let said = &said[..said.find("/// A capability named is a promise").unwrap()];
    let every = source
        .lines()
        .find(|line| line.contains("// and those of its capabilities"))
        .unwrap();
    for name in known {
        let quoted = format!("`{name}`");
        assert!(
            said.contains(&quoted),
            "the docs' list does not name {quoted}"
        );
        assert!(
            every.contains(name),
            "the example of them all lacks {name}: {every}"
        );
    }
}
