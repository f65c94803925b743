//! The shared "needs a service" rule (`service_support`) itself: under CI a
//! missing need fails, naming it; locally it is a skip.

mod service_support;

use std::panic::catch_unwind;

use service_support::needs_under;

fn panic_text(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|text| (*text).to_owned()))
        .unwrap_or_default()
}

#[test]
fn under_ci_any_non_empty_value_a_missing_need_fails_naming_it() {
    for ci in ["true", "1", "false", "yes"] {
        let payload = catch_unwind(|| needs_under(Some(ci), "the-tool", false, "it is needed"))
            .expect_err("a missing need must fail under CI");
        let text = panic_text(payload);
        assert!(text.starts_with("missing the-tool: it is needed (CI="), "CI={ci:?}: {text}");
        assert!(text.contains(&format!("CI={ci:?}")), "{text}");
    }
}

#[test]
fn locally_a_missing_need_is_a_skip_naming_it() {
    for ci in [None, Some("")] {
        assert_eq!(
            needs_under(ci, "the-tool", false, "it is needed"),
            Err("missing the-tool: it is needed".to_owned())
        );
    }
}

#[test]
fn a_need_that_is_met_neither_skips_nor_fails() {
    for ci in [None, Some(""), Some("true")] {
        assert_eq!(needs_under(ci, "the-tool", true, "it is needed"), Ok(()));
    }
}
