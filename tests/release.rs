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
