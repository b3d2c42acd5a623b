//! The registry is the one list of tabs: the tab bar, the number keys, `<`/`>` cycling, the
//! help and the export all follow [`TABS`] (its order, titles and `shown`), so a tab added
//! there appears everywhere at once with no second list to keep in step.

use ratatui::backend::TestBackend;
use ratatui::Terminal;

use super::*;
use crate::tui::action::Action;
use crate::tui::app::Focus;
use crate::tui::component::help;
use crate::tui::export::{view_data, view_name};
use crate::tui::keymap::KeyMap;
use crate::tui::theme::Theme;
use crate::tui::update::update;

fn app(pipeline: bool) -> App {
    let mut a = App::new(Vec::new(), KeyMap::default(), Theme::monochrome());
    a.detail.set_pipeline(pipeline);
    a.screen.focus = Focus::Detail;
    a
}

/// The registered tabs a Program (or a pipeline) shows, in registry order (a capture's own
/// tabs only while a capture is open).
fn registered(pipeline: bool) -> Vec<&'static dyn TabComponent> {
    TABS.iter()
        .copied()
        .filter(|c| c.shown(pipeline) && !c.capture_only())
        .collect()
}

/// The text of the detail panel's tab bar drawn `width` columns wide.
fn tab_bar(a: &App, width: u16) -> String {
    let mut term = Terminal::new(TestBackend::new(width, 8)).expect("test terminal");
    term.draw(|f| crate::tui::views::tabs::draw(f, f.area(), a))
        .expect("draw");
    let buf = term.backend().buffer();
    (0..width).map(|x| buf[(x, 1)].symbol()).collect()
}

#[test]
fn ids_and_titles_are_distinct() {
    let mut ids: Vec<Tab> = TABS.iter().map(|c| c.id()).collect();
    assert_eq!(Tab::all(), ids);
    ids.sort_by_key(|t| t.title());
    ids.dedup();
    assert_eq!(ids.len(), TABS.len(), "two registered tabs share a title");
    for (i, c) in TABS.iter().enumerate() {
        assert_eq!(c.id().index(), i);
        assert_eq!(tab(c.id()).title(), c.title());
    }
}

#[test]
fn the_shown_tabs_are_the_registrys_in_order() {
    for pipeline in [false, true] {
        let ids: Vec<Tab> = registered(pipeline).iter().map(|c| c.id()).collect();
        assert_eq!(app(pipeline).detail.tabs(), ids);
        assert_eq!(Tab::visible(pipeline, false), ids);
    }
    // Some tab is a pipeline's alone (Plan), so the two sets differ.
    assert!(registered(true).len() > registered(false).len());
}

#[test]
fn the_tab_bar_draws_every_registered_tab_in_order() {
    for pipeline in [false, true] {
        let a = app(pipeline);
        let bar = tab_bar(&a, 240);
        let mut at = 0;
        for (i, c) in registered(pipeline).iter().enumerate() {
            let label = format!(" {} {} ", i + 1, c.title());
            let found = bar[at..].find(&label).map(|p| p + at);
            assert!(
                found.is_some(),
                "tab bar lacks {label:?} after column {at}: {bar}"
            );
            at = found.unwrap_or(at) + label.len();
        }
        let n = registered(pipeline).len();
        assert!(
            !bar.contains(&format!(" {} ", n + 1)),
            "an extra tab: {bar}"
        );
    }
}

#[test]
fn number_keys_and_cycling_follow_the_registry() {
    for pipeline in [false, true] {
        let mut a = app(pipeline);
        let shown = registered(pipeline);
        for (i, c) in shown.iter().enumerate() {
            update(&mut a, Action::Command(Command::Tab(i as u8 + 1)));
            assert_eq!(a.detail.tab, c.id(), "number key {}", i + 1);
        }
        // A number past the shown tabs changes nothing.
        update(&mut a, Action::Command(Command::Tab(shown.len() as u8 + 1)));
        assert_eq!(a.detail.tab, shown[shown.len() - 1].id());
        // `>` goes through them in order and wraps.
        update(&mut a, Action::Command(Command::Tab(1)));
        let mut seen = vec![a.detail.tab];
        for _ in 0..shown.len() {
            update(&mut a, Action::Command(Command::NextTab));
            seen.push(a.detail.tab);
        }
        let mut want: Vec<Tab> = shown.iter().map(|c| c.id()).collect();
        want.push(want[0]);
        assert_eq!(seen, want);
    }
}

#[test]
fn help_names_every_registered_tab_by_its_number() {
    for pipeline in [false, true] {
        let a = app(pipeline);
        let text: Vec<String> = help::lines(&a)
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        let named: Vec<&str> = text
            .iter()
            .filter_map(|l| l.split("detail tab: ").nth(1))
            .filter_map(|rest| rest.split_whitespace().next())
            .collect();
        let want: Vec<&str> = registered(pipeline).iter().map(|c| c.title()).collect();
        assert_eq!(named, want);
    }
}

#[test]
fn export_names_and_data_come_from_the_registered_tab() {
    let mut a = app(true);
    for c in registered(true) {
        a.detail.show(c.id());
        assert_eq!(a.detail.tab, c.id());
        assert_eq!(view_name(&a), c.title().to_lowercase());
        assert_eq!(view_data(&a)["data"], c.data(&a));
    }
}
