//! The landing zone of a catalog: `landing_path` and `promote_into`, validated.
//!
//! The landing zone is a folder (or `s3://` prefix) outside DuckLake that dlt's filesystem
//! destination writes; a promotion later appends each load to the `promote_into` schema through
//! the IO manager. So the folder never overlaps a data path (DuckLake's cleanup and the landing
//! zone's retention would delete each other's files), and the promotion target is a raw schema
//! of the catalog that dlt does not own (dlt's strict loads and promoted loads never share a
//! schema).

use super::locations::comparable;
use super::model::{SchemaDef, DEFAULT_PROMOTE_INTO, DLT_LAYER};
use super::names::same_name;
use super::raw;
use super::validate::{folder, CatalogScope, Source};
use super::CatalogDef;
use crate::error::Result;
use crate::rules::{relax_line, SINGLE_WRITER};
use std::collections::BTreeMap;
use toml::Spanned;

/// `landing_path` (normalised like `data_path`) and `promote_into` (its default applied), both
/// `None` when the catalog has no landing zone.
pub(super) fn landing(
    cx: &CatalogScope,
    raw: &raw::Catalog,
    data_path: &str,
    schemas: &BTreeMap<String, SchemaDef>,
) -> Result<(Option<String>, Option<String>)> {
    let Some(landing_raw) = &raw.landing_path else {
        if let Some(p) = &raw.promote_into {
            return Err(cx.err(
                p.span(),
                "promote_into",
                format!(
                    "needs landing_path: promote_into names the schema loads promoted from the \
                     landing zone go into. Set landing_path on [catalogs.{}] or remove \
                     promote_into",
                    cx.name
                ),
            ));
        }
        return Ok((None, None));
    };
    let landing_path = folder(cx, landing_raw, "landing_path")?;
    if let Some(e) = overlap_error(cx.name, &landing_path, cx.name, data_path) {
        return Err(cx.err(landing_raw.span(), "landing_path", e));
    }
    let promote_into = promote_into(cx, landing_raw, raw.promote_into.as_ref(), schemas)?;
    Ok((Some(landing_path), Some(promote_into)))
}

/// `promote_into`: a raw schema defined in the catalog, owned by the IO manager and not by dlt.
fn promote_into(
    cx: &CatalogScope,
    landing_raw: &Spanned<String>,
    raw: Option<&Spanned<String>>,
    schemas: &BTreeMap<String, SchemaDef>,
) -> Result<String> {
    let c = cx.name;
    // A refusal of the default is reported at landing_path, which brought the default in.
    let (schema, span, key, given) = match raw {
        Some(p) if p.get_ref().trim().is_empty() => {
            return Err(cx.err(
                p.span(),
                "promote_into",
                format!(
                    "must not be empty; remove the key to use the default \
                     \"{DEFAULT_PROMOTE_INTO}\""
                ),
            ))
        }
        Some(p) => (p.get_ref().clone(), p.span(), "promote_into", ""),
        None => (
            DEFAULT_PROMOTE_INTO.to_string(),
            landing_raw.span(),
            "landing_path",
            " (the default of promote_into)",
        ),
    };
    let err = |message: String| cx.err(span.clone(), key, message);
    // The defined schema DuckDB resolves the name to (`Raw_Landed` is `raw_landed`).
    let resolved = schemas
        .get_key_value(&schema)
        .or_else(|| schemas.iter().find(|(name, _)| same_name(name, &schema)));
    let Some((defined, def)) = resolved else {
        return Err(err(format!(
            "loads promoted from the landing zone go into schema '{schema}'{given}, which is not \
             defined. Add [catalogs.{c}.schemas.{schema}] with writer = \"io_manager\" and layer = \
             \"raw\", or set promote_into to a raw schema the IO manager owns"
        )));
    };
    if def.layer != DLT_LAYER {
        return Err(err(format!(
            "loads promoted from the landing zone go into schema '{schema}'{given}, which has \
             layer '{}'; promoted loads go into a raw schema. Set layer = \"raw\" under \
             [catalogs.{c}.schemas.{schema}], or set promote_into to a raw schema the IO manager \
             owns",
            def.layer
        )));
    }
    if def.writers.iter().any(|w| w == "dlt") {
        return Err(err(format!(
            "loads promoted from the landing zone go into schema '{schema}'{given}, which dlt \
             writes; dlt's strict loads and promoted loads never share a schema, and the IO \
             manager promotes. Add [catalogs.{c}.schemas.raw_landed] with writer = \
             \"io_manager\" and layer = \"raw\", and set promote_into = \"raw_landed\""
        )));
    }
    if cx.rules.single_writer.enabled && !def.writers.iter().any(|w| w == "io_manager") {
        return Err(err(format!(
            "loads promoted from the landing zone go into schema '{schema}'{given}, which is \
             owned by '{}', and the IO manager promotes. Set writer = \"io_manager\" under \
             [catalogs.{c}.schemas.{schema}], set promote_into to a raw schema the IO manager \
             owns, or relax the rule with {}",
            def.writers.join(", "),
            relax_line(SINGLE_WRITER)
        )));
    }
    Ok(defined.clone())
}

/// Every catalog's landing zone apart from every other catalog's data path (its own was checked
/// with the catalog) and from every other catalog's landing zone. Each pair is compared in both
/// directions, in the [`comparable`] spelling of each side.
pub(super) fn apart_from_data_paths(
    source: &Source,
    file: &raw::File,
    catalogs: &BTreeMap<String, CatalogDef>,
) -> Result<()> {
    for (name, def) in catalogs {
        let Some(landing) = &def.landing_path else {
            continue;
        };
        let others = || catalogs.values().filter(|o| o.name != *name);
        let error = others()
            .find_map(|other| overlap_error(name, landing, &other.name, &other.data_path))
            .or_else(|| {
                others().find_map(|other| {
                    let theirs = other.landing_path.as_deref()?;
                    landings_overlap(name, landing, &other.name, theirs)
                })
            });
        if let Some(e) = error {
            let span = file.catalogs[name]
                .get_ref()
                .landing_path
                .as_ref()
                .map_or(0..0, Spanned::span);
            return Err(source.invalid(span, format!("catalogs.{name}.landing_path"), e));
        }
    }
    Ok(())
}

/// How folder `a` stands to folder `b`, compared in their [`comparable`] spellings (which end in
/// `/`, so `data/lake2/` is not inside `data/lake/`); `None` when they are apart.
fn relation(a: &str, b: &str) -> Option<&'static str> {
    let (a, b) = (comparable(a), comparable(b));
    if a == b {
        Some("is the same folder as")
    } else if a.starts_with(&b) {
        Some("is inside")
    } else if b.starts_with(&a) {
        Some("contains")
    } else {
        None
    }
}

/// A location as a message shows it: as written (local paths made absolute), and the one
/// spelling it was compared in when that reads differently.
fn shown(location: &str) -> String {
    let compared = comparable(location);
    let plain = compared.strip_prefix("file://").unwrap_or(&compared);
    if compared == location || (plain == location && !super::is_url(location)) {
        location.to_string()
    } else {
        format!("{location}, that is {compared}")
    }
}

/// Why the landing zone of catalog `catalog` may not be at `landing`, given the data path
/// `data` of catalog `owner`; `None` when the two are apart.
fn overlap_error(catalog: &str, landing: &str, owner: &str, data: &str) -> Option<String> {
    let relation = relation(landing, data)?;
    let whose = if catalog == owner {
        "its own data path".to_string()
    } else {
        format!("the data path of catalog '{owner}'")
    };
    let beside = beside(data)
        .map(|s| format!(", such as landing_path = \"{s}\""))
        .unwrap_or_default();
    Some(format!(
        "the landing zone of catalog '{catalog}' ({}) {relation} {whose} ({}); a landing zone \
         and a data path must not hold one another, since either would let one side delete the \
         other's files (DuckLake's cleanup or the landing zone's retention). Give the landing \
         zone a folder of its own beside the data path{beside}",
        shown(landing),
        shown(data)
    ))
}

/// Why the landing zone of catalog `catalog` may not be at `landing`, given the landing zone
/// `theirs` of catalog `other`; `None` when the two are apart.
fn landings_overlap(catalog: &str, landing: &str, other: &str, theirs: &str) -> Option<String> {
    let relation = relation(landing, theirs)?;
    Some(format!(
        "the landing zone of catalog '{catalog}' ({}) {relation} the landing zone of catalog \
         '{other}' ({}); two catalogs' landing zones must not hold one another, since each \
         catalog's promotion and retention would take the other's loads. Give each catalog a \
         landing folder of its own",
        shown(landing),
        shown(theirs)
    ))
}

/// A folder beside the data path `data` (`/srv/lake/` -> `/srv/landing/`), if it has a parent.
fn beside(data: &str) -> Option<String> {
    let trimmed = data.trim_end_matches('/');
    let cut = trimmed.rfind('/')?;
    let (parent, last) = (&trimmed[..=cut], &trimmed[cut + 1..]);
    if last.is_empty() || parent.ends_with("://") || parent.is_empty() {
        return None;
    }
    let name = if last == "landing" {
        "landing_zone"
    } else {
        "landing"
    };
    Some(format!("{parent}{name}/"))
}
