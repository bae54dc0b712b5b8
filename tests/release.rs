//! The version a user reads agrees everywhere: the package's, the
//! README's dependency line, and the changelog's newest heading.

#[test]
fn the_package_the_readme_and_the_changelog_name_one_version() {
    let version = env!("CARGO_PKG_VERSION");
    let minor = version.rsplit_once('.').unwrap().0;
    let readme = include_str!("../README.md");
    assert!(
        readme.contains(&format!("flakegen = \"{minor}\"")),
        "the README's dependency line is not flakegen = \"{minor}\""
    );
    let changelog = include_str!("../CHANGELOG.md");
    let newest = changelog
        .lines()
        .find(|l| l.starts_with("## ["))
        .expect("a version heading");
    assert!(
        newest.starts_with(&format!("## [{version}]")),
        "the changelog's newest heading, {newest:?}, is not {version}"
    );
}

/// Every file with `unsafe` in it is in the crate docs' list, and every
/// file the list names has some.
#[test]
fn the_crate_docs_list_every_file_with_unsafe_code() {
    fn sources(dir: &std::path::Path, found: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                sources(&path, found);
            } else if path.extension().is_some_and(|e| e == "rs") {
                found.push(path);
            }
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![];
    sources(&root.join("src"), &mut files);
    let docs = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
    let section = &docs[docs.find("//! # Unsafe code").unwrap()..];
    let section = &section[..section.find("//! # Caveats").unwrap()];
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let name = file
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let has = text.contains("unsafe {") || text.contains("unsafe fn");
        let listed = section.contains(&format!("`{name}`"));
        assert_eq!(has, listed, "{name}: unsafe {has}, listed {listed}");
    }
}

/// The README's claims about files and tables hold: every path it names in
/// backticks exists in the repository, and every `flakegen_…` table it
/// names is created by a registry's DDL. (Two were wrong: a marker table
/// `flakegen_marker`, and `examples/sharded.rs`.)
#[test]
fn the_readme_names_only_files_and_tables_that_exist() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let ddl: String = ["postgres", "mysql"]
        .iter()
        .flat_map(|db| {
            ["leases.sql", "namespaces.sql"].map(|f| format!("src/lease/backend/{db}/{f}"))
        })
        .map(|path| std::fs::read_to_string(root.join(path)).unwrap())
        .collect();
    let mut checked = 0;
    for quoted in readme.split('`').skip(1).step_by(2) {
        let word = quoted.trim();
        let is_path = !word.contains(' ')
            && !word.contains("://")
            && word.contains('/')
            && [".rs", ".sh", ".md", ".png", ".toml"]
                .iter()
                .any(|e| word.ends_with(e));
        if is_path {
            assert!(
                root.join(word).exists(),
                "the README names {word}, which does not exist"
            );
            checked += 1;
        }
        let table = word
            .strip_prefix("flakegen_")
            .filter(|t| !t.is_empty() && t.chars().all(|c| c.is_ascii_lowercase() || c == '_'));
        if table.is_some()
            && !word.ends_with("_id")
            && !["flakegen_time", "flakegen_worker", "flakegen_sequence"].contains(&word)
        {
            assert!(
                ddl.contains(&format!("CREATE TABLE IF NOT EXISTS {word}")),
                "the README names the table {word}, which no registry creates"
            );
            checked += 1;
        }
    }
    assert!(
        checked >= 3,
        "the README's paths and tables were not found ({checked})"
    );
}

/// The lease docs' table of where each rule is kept names, for every rule
/// 1 to 9, files that exist and cite that rule ("rule N").
#[test]
fn every_rule_is_cited_in_the_files_the_lease_docs_name() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lease");
    let docs = std::fs::read_to_string(root.join("mod.rs")).unwrap();
    let mut rules = vec![];
    for line in docs.lines() {
        let Some(row) = line.strip_prefix("//! | ") else {
            continue;
        };
        let Some((rule, files)) = row.split_once(". ") else {
            continue;
        };
        let Ok(rule) = rule.parse::<u32>() else {
            continue;
        };
        let files = files.split(" | ").nth(1).unwrap_or("");
        let named: Vec<&str> = files.split('`').skip(1).step_by(2).collect();
        assert!(!named.is_empty(), "rule {rule} names no file");
        for file in named {
            let text = std::fs::read_to_string(root.join(file))
                .unwrap_or_else(|e| panic!("rule {rule}: {file}: {e}"));
            assert!(
                text.contains(&format!("rule {rule}")),
                "rule {rule} is said to be kept in {file}, which does not cite it"
            );
        }
        rules.push(rule);
    }
    assert_eq!(
        rules,
        (1..=9).collect::<Vec<_>>(),
        "the table lists rules 1 to 9"
    );
}

/// The guide page on forks, freezes and snapshots is where the README
/// sends its reader, and names only variables the crate reads (its
/// commands are held by the CLI's tests, its items by rustdoc's links).
#[test]
fn the_readme_leads_to_the_guide_on_copies_and_it_names_what_exists() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(readme.contains("`flakegen::guide::copies`"));
    let guides = std::fs::read_to_string(root.join("src/guide.rs")).unwrap();
    let start = guides
        .find("/// # Serverless, forks and snapshots")
        .unwrap();
    let page = &guides[start..guides.find("pub mod copies {}").unwrap()];
    let sources: String = ["src/global/mod.rs", "src/worker.rs"]
        .iter()
        .map(|file| std::fs::read_to_string(root.join(file)).unwrap())
        .collect();
    let mut named = 0;
    for word in page.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        if word.starts_with("FLAKEGEN_") {
            named += 1;
            assert!(
                sources.contains(&format!("\"{word}\"")),
                "the guide names {word}, which the crate does not read"
            );
        }
    }
    assert!(named > 0, "the guide names no variable");
}

/// Every list of registries in prose names each of the table's
/// (`lease::REGISTRIES`): the one list a new registry joins, and these go
/// stale when it does not (six or more did, twice). Each list is found by
/// the words that begin it, and must name every registry as it names them.
#[test]
fn every_list_of_registries_names_each_one() {
    use flakegen::lease::{REGISTRIES, RegistryKind};
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |file: &str| std::fs::read_to_string(root.join(file)).unwrap();
    // (file, the words the list begins with, how far it runs, how it names one)
    type Names = fn(&RegistryKind) -> String;
    let lists: [(&str, &str, usize, Names); 9] = [
        ("src/lib.rs", "//! # Features", 4_000, |k| {
            format!("| `{}` |", k.feature)
        }),
        (
            "src/lib.rs",
            "id from a store the service already runs",
            300,
            |k| format!("`{}`", k.feature),
        ),
        (
            "src/lease/mod.rs",
            "//! worker id from a [`Registry`]",
            400,
            |k| format!("`{}`", k.feature),
        ),
        (
            "src/lease/backend/mod.rs",
            "//! registry by URL",
            300,
            |k| format!("`{}`", k.registry),
        ),
        (
            "src/lease/backend/mod.rs",
            "/// Where worker-id leases are stored",
            400,
            |k| format!("`{}`", k.registry),
        ),
        (
            "src/lease/backend/connect.rs",
            "/// Connects to the registry a URL names",
            700,
            |k| format!("`{}://", k.schemes[0]),
        ),
        ("README.md", "lease one with the", 200, |k| {
            format!("`{}`", k.feature)
        }),
        ("README.md", "| Registry (feature) |", 20_000, |k| {
            format!("`{}` (`{}`)", k.registry, k.feature)
        }),
        (
            "contract/src/lib.rs",
            "flakegen runs over its own registries",
            200,
            |k| k.name.split(" or ").next().unwrap().to_owned(),
        ),
    ];
    for (file, begins, runs, names) in lists {
        let text = read(file);
        let start = text
            .find(begins)
            .unwrap_or_else(|| panic!("{file}: no list begins with {begins:?}"));
        let list = &text[start..text.len().min(start + runs)];
        for kind in REGISTRIES {
            let name = names(kind);
            assert!(
                list.contains(&name),
                "{file}: the list that begins {begins:?} does not name {name}"
            );
        }
    }
}
