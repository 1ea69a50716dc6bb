//! The statements on the stock tables, written once with `?` placeholders and the table prefix
//! put in when the store is built. Values only ever travel as bound parameters.
//!
//! `<prefix>_levels`: one row per SKU ever restocked (`available`, `reserved`, `sold`,
//! `received`, and `version`, raised by every change, for the optimistic strategy).
//! `<prefix>_orders`: one row per order id and kind ([`DEDUCTION`], [`RESERVATION`], or
//! [`RESTOCK`] with the restock id as its order id), its
//! primary key `(sku, kind, order_id)` being what makes a retried order find its first outcome:
//! `quantity`, `outcome` (1 taken, 0 out of stock), `outcome_value` (units left, or available),
//! a reservation's `state` and `expires_at` (µs, the database's clock; for a settled
//! reservation when it was settled, for a deduction its `recorded_at`), and `recorded_at`. A
//! row is swept once it has been final for the retention (`sweep_final`).

use super::dialect::schema;
use crate::sql::Dialect;

/// An order row's kind: a deduction.
pub(super) const DEDUCTION: i64 = 1;
/// An order row's kind: a reservation.
pub(super) const RESERVATION: i64 = 2;
/// An order row's kind: a restock (its `order_id` the restock id).
pub(super) const RESTOCK: i64 = 3;

/// A reservation's state: its units are held until `expires_at`.
pub(super) const LIVE: i64 = 1;
/// A reservation's state: sold.
pub(super) const CONFIRMED: i64 = 2;
/// A reservation's state: its units went back by a cancel.
pub(super) const CANCELLED: i64 = 3;
/// A reservation's state: its units went back when it ran out.
pub(super) const EXPIRED: i64 = 4;
/// A reservation's state (and a deduction's): nothing was held, out of stock.
pub(super) const NOTHING_HELD: i64 = 5;

/// Every statement, for one dialect and table prefix.
#[derive(Debug)]
pub(super) struct Statements {
    /// The schema, statement by statement.
    pub(super) schema: Vec<String>,
    /// `available, version` of a SKU, its row locked (`?`: sku).
    pub(super) level_locked: String,
    /// `available, version` of a SKU (`?`: sku).
    pub(super) level_read: String,
    /// `available, reserved, sold, received` of a SKU (`?`: sku).
    pub(super) level_all: String,
    /// An order's `quantity, outcome, outcome_value` (`?`: sku, kind, order).
    pub(super) order_read: String,
    /// Records an order (`?`: sku, kind, order, quantity, outcome, value, state, ttl µs).
    pub(super) order_insert: String,
    /// Sells units when available (`?`: units, units, sku, units).
    pub(super) sell: String,
    /// Sells units when available and the row is at `version` (`?`: units, units, sku,
    /// version, units).
    pub(super) sell_at_version: String,
    /// Holds units when available (`?`: units, units, sku, units).
    pub(super) hold: String,
    /// Holds units when available and the row is at `version`.
    pub(super) hold_at_version: String,
    /// Adds a restock (`?`: sku, units, units).
    pub(super) restock: String,
    /// A reservation's `quantity, state, 1 when run out`, its row locked (`?`: sku, order).
    pub(super) reservation_locked: String,
    /// Sets a reservation's state (`?`: state, sku, order), and its `expires_at` to now when
    /// that is sooner: from then on it counts when the record became final.
    pub(super) reservation_set: String,
    /// Held units go back to stock (`?`: units, units, sku).
    pub(super) unhold: String,
    /// Held units are sold (`?`: units, units, sku).
    pub(super) sell_held: String,
    /// 1 when a reservation of the SKU ran out and still holds its units (`?`: sku).
    pub(super) any_due: String,
    /// The database's clock, µs.
    pub(super) now: String,
    /// The units of live reservations run out by a moment (`?`: sku, µs).
    pub(super) due_units: String,
    /// Marks them run out (`?`: sku, µs).
    pub(super) due_expire: String,
    /// One batch of the records of SKUs never restocked, older than a retention (`?`: µs).
    pub(super) sweep_unknown: String,
    /// One batch of the records final for longer than a retention (`?`: µs, µs): every row
    /// but a live reservation's, once both its `recorded_at` and its `expires_at` (a
    /// reservation's settlement or run-out time) are that long ago.
    pub(super) sweep_final: String,
}

impl Statements {
    pub(super) fn new<D: Dialect>(prefix: &str) -> Self {
        let sql = |text: String| D::placeholders(&text);
        let now = D::NOW_US;
        let levels = format!("{prefix}_levels");
        let orders = format!("{prefix}_orders");
        let take = |moved: &str, guard: &str| {
            sql(format!(
                "UPDATE {levels} SET available = available - ?, {moved} = {moved} + ?, \
                 version = version + 1 WHERE sku = ?{guard} AND available >= ?"
            ))
        };
        let reservation = format!("sku = ? AND kind = {RESERVATION} AND order_id = ?");
        let due =
            format!("sku = ? AND kind = {RESERVATION} AND state = {LIVE} AND expires_at <= ?");
        Self {
            schema: schema::<D>(prefix),
            level_locked: sql(format!(
                "SELECT available, version FROM {levels} WHERE sku = ? FOR UPDATE"
            )),
            level_read: sql(format!(
                "SELECT available, version FROM {levels} WHERE sku = ?"
            )),
            level_all: sql(format!(
                "SELECT available, reserved, sold, received FROM {levels} WHERE sku = ?"
            )),
            order_read: sql(format!(
                "SELECT quantity, outcome, outcome_value FROM {orders} \
                 WHERE sku = ? AND kind = ? AND order_id = ?"
            )),
            order_insert: sql(format!(
                "INSERT INTO {orders} (sku, kind, order_id, quantity, outcome, outcome_value, \
                 state, expires_at, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, {now} + ?, {now})"
            )),
            sell: take("sold", ""),
            sell_at_version: take("sold", " AND version = ?"),
            hold: take("reserved", ""),
            hold_at_version: take("reserved", " AND version = ?"),
            restock: sql(D::restock(prefix)),
            reservation_locked: sql(format!(
                "SELECT quantity, state, {} FROM {orders} WHERE {reservation} FOR UPDATE",
                D::int(&format!("CASE WHEN expires_at <= {now} THEN 1 ELSE 0 END"))
            )),
            reservation_set: sql(format!(
                "UPDATE {orders} SET state = ?, expires_at = LEAST(expires_at, {now}) \
                 WHERE {reservation}"
            )),
            unhold: sql(format!(
                "UPDATE {levels} SET available = available + ?, reserved = reserved - ?, \
                 version = version + 1 WHERE sku = ?"
            )),
            sell_held: sql(format!(
                "UPDATE {levels} SET reserved = reserved - ?, sold = sold + ?, \
                 version = version + 1 WHERE sku = ?"
            )),
            any_due: sql(format!(
                "SELECT {} FROM {orders} WHERE sku = ? AND kind = {RESERVATION} \
                 AND state = {LIVE} AND expires_at <= {now} LIMIT 1",
                D::int("1")
            )),
            now: format!("SELECT {now}"),
            due_units: sql(format!(
                "SELECT {} FROM {orders} WHERE {due}",
                D::int("COALESCE(SUM(quantity), 0)")
            )),
            due_expire: sql(format!("UPDATE {orders} SET state = {EXPIRED} WHERE {due}")),
            sweep_unknown: sql(D::sweep_unknown(prefix)),
            sweep_final: sql(D::delete_batch(
                prefix,
                &format!("recorded_at < {now} - ? AND expires_at < {now} - ? AND state <> {LIVE}"),
            )),
        }
    }
}
