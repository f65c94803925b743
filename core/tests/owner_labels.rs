//! `tests/vectors/labels/owner-labels.json`: what a sandbox carries, set at
//! create, in each vendor's shape (`vendor_owner_labels`; without a vendor,
//! `owner_labels`). Node and Python run the same cases through their bindings.

use sandbox_reclaim::providers::{owner_labels, vendor_owner_labels};
use serde_json::Value;

#[test]
fn every_owner_labels_vector_holds() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors/labels/owner-labels.json");
    let document: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let cases = document["cases"].as_array().unwrap();
    assert!(cases.len() > 10);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let (owner, key) = (case["owner"].as_str().unwrap(), case["key"].as_str().unwrap());
        let got = match case["vendor"].as_str() {
            Some(vendor) => vendor_owner_labels(vendor, owner, key).map(|marks| serde_json::to_value(marks).unwrap()),
            None => owner_labels(owner, key).map(|labels| serde_json::to_value(labels).unwrap()),
        };
        match (&case["expect"], got) {
            (Value::Null, Ok(marks)) => panic!("{name}: expected an error, got {marks}"),
            (Value::Null, Err(invalid)) => {
                assert_eq!(invalid.field, case["error"]["field"], "{name}");
                let wanted = case["error"]["match"].as_str().unwrap();
                assert!(invalid.to_string().contains(wanted), "{name}: {invalid}");
            }
            (expect, Ok(marks)) => assert_eq!(&marks, expect, "{name}"),
            (_, Err(invalid)) => panic!("{name}: {invalid}"),
        }
    }
}
