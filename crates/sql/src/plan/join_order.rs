//! The join order of a SELECT whose joins are all inner (comma joins,
//! JOIN … ON, CROSS JOIN): a greedy choice from estimated row counts,
//! not an exhaustive search. Queries with a LEFT, RIGHT or FULL join keep
//! their FROM order, and so do one or two FROM items.
//!
//! Each FROM item's rows are estimated from what it is and from its own
//! WHERE terms (those over its columns alone):
//!
//! - a table: its live keys (`PkIndex::len`; VIDs handed out for a table
//!   without a key); 1 row when `col = constant` terms fix its whole
//!   primary key, else scaled by [`EQ_SELECTIVITY`] per other
//!   `= constant` term and [`OTHER_SELECTIVITY`] per other term;
//! - a VALUES list: its rows; a derived table, `generate_series` or a
//!   catalog relation: [`DEFAULT_ROWS`], scaled the same way.
//!
//! An equi-term `l = r` whose sides name disjoint items *connects* the
//! items so far with an item `j` when one side names `j` alone and the
//! other only items so far — it is then a hash-join key (`query/plan.rs`).
//! Joining `j` to `R` estimated rows gives
//!
//! ```text
//!  terms fix j's whole primary key (a key-lookup join)  R · rows(j) / table(j)
//!  terms fix the key of an item p so far (j → p)         R · rows(j) / table(p)
//!  connected otherwise (no key: many to many)            max(R · rows(j) / 200, R, rows(j))
//!  not connected (a cross product)                       R · rows(j)
//! ```
//!
//! and costs the rows it reads of `j` — all of them for a hash join;
//! [`LOOKUP_FACTOR`] per row so far for a key-lookup join,
//! at most all (`exec/join/lookup.rs` looks keys up only while that reads
//! less) — plus the rows it makes.
//!
//! From each item as the first, the order grows greedily: the connected
//! item whose join costs least comes next (ties: a key-lookup join, fewer
//! rows after, the smaller item, FROM order); only when no remaining item
//! is connected is the smallest one joined as a cross product. Of these
//! orders (one per first item) the one whose joins cost least in sum is
//! used (ties: FROM order of the first item). That is n greedy passes,
//! not a search over all orders: a heuristic that avoids cross products
//! and reads big tables by key when the rows before them are few.
//!
//! ```text
//!  FROM supplier, order_line l1, orders, stock, nation   (CH Q21)
//!         stock ──mod(s_w_id*s_i_id, 10000) = su_suppkey── supplier (key)
//!           │                                               │
//!     ol_w_id = s_w_id, ol_i_id = s_i_id         su_nationkey = n_nationkey
//!           │                                               │
//!          l1 ── ol_o_id = o_id … ── orders (key)        nation (key, n_name = …)
//!  order: stock, supplier (lookups), nation, l1, orders (lookups) —
//!  never supplier × l1
//! ```
//!
//! The order changes only how the rows are made: the planner compiles
//! the query over the reordered columns, expands `*` and `t.*` in FROM
//! order, and EXPLAIN lists the items in the order used. Rows of a query
//! without ORDER BY may come in another order, as in PostgreSQL.

use std::cmp::Ordering;

use sqlparser::ast::{BinaryOperator, Expr};

use crate::bind::compile::compile;
use crate::bind::scope::Scope;
use crate::plan::access::{column_of, pk_terms};
use crate::plan::join_plan::LOOKUP_FACTOR;
use crate::plan::or_terms::copyable;
use crate::plan::query::Input;

/// The share of a table's rows one `col = constant` term keeps.
pub const EQ_SELECTIVITY: f64 = 0.1;
/// The share of rows any other term over one item keeps.
pub const OTHER_SELECTIVITY: f64 = 0.3;
/// Rows assumed for a derived table, a set-returning function or a
/// catalog relation.
pub const DEFAULT_ROWS: f64 = 100.0;
/// Distinct values assumed for a join column that is no key, as
/// PostgreSQL assumes for a column without statistics
/// (`DEFAULT_NUM_DISTINCT`).
pub const NON_KEY_DISTINCT: f64 = 200.0;

/// `R` rows joined with `rows` rows on terms that are no key on either
/// side: each value meets `1 / NON_KEY_DISTINCT` of the other side, and
/// never fewer rows than the bigger side (a foreign-key-like join).
fn many_to_many(r: f64, rows: f64) -> f64 {
    (r * rows / NON_KEY_DISTINCT).max(r.max(rows))
}

/// One FROM item's estimate.
struct Item {
    /// Rows of the item without its terms.
    base: f64,
    /// Rows kept by its own terms.
    rows: f64,
    /// Primary-key columns (positions in the item's row); empty: no key.
    pk: Vec<usize>,
    /// Per key column: fixed by a `col = constant` term.
    fixed: Vec<bool>,
}

/// One side of an equi-term: the items it names (a bit each) and the
/// (item, column) it is, when it is a plain column.
struct Side {
    items: u64,
    column: Option<(usize, usize)>,
}

/// An equi-term `l = r` whose sides name disjoint, non-empty item sets.
struct Edge([Side; 2]);

/// What joining one item to the rows so far gives.
#[derive(Clone, Copy)]
struct Step {
    /// Rows after the join.
    rows: f64,
    /// Rows read of the item plus rows made.
    cost: f64,
    lookup: bool,
    connected: bool,
}

/// `a` and `b` compared, equal within rounding.
fn cmp(a: f64, b: f64) -> Ordering {
    if (a - b).abs() <= 1e-9 * a.abs().max(b.abs()) {
        Ordering::Equal
    } else {
        a.total_cmp(&b)
    }
}

struct Planner {
    items: Vec<Item>,
    edges: Vec<Edge>,
}

impl Planner {
    /// Whether the terms fix item `j`'s whole key from the items `by`
    /// (and constants).
    fn key_fixed(&self, j: usize, by: u64) -> bool {
        let item = &self.items[j];
        !item.pk.is_empty()
            && item.pk.iter().zip(&item.fixed).all(|(&c, &fixed)| {
                fixed
                    || self.edges.iter().any(|Edge(sides)| {
                        (0..2).any(|s| {
                            let other = &sides[1 - s];
                            sides[s].column == Some((j, c)) && other.items & !by == 0
                        })
                    })
            })
    }

    /// Whether an equi-term joins item `j` to the items `so_far`.
    fn connects(&self, so_far: u64, j: usize) -> bool {
        self.edges.iter().any(|Edge(sides)| {
            (0..2).any(|s| sides[s].items == 1 << j && sides[1 - s].items & !so_far == 0)
        })
    }

    /// Joining item `j` to `rows` rows of the items `so_far`.
    fn step(&self, so_far: u64, rows: f64, j: usize) -> Step {
        let item = &self.items[j];
        if !self.connects(so_far, j) {
            let out = rows * item.rows;
            return Step {
                rows: out,
                cost: item.base + out,
                lookup: false,
                connected: false,
            };
        }
        let lookup = self.key_fixed(j, so_far);
        let (out, read) = if lookup {
            // `exec/join/lookup.rs` looks keys up while that reads less.
            let read = (rows * LOOKUP_FACTOR as f64).min(item.base);
            (rows * item.rows / item.base, read)
        } else {
            // j names the key of an item p so far: each row so far (one
            // p row) meets rows(j) / table(p) of j's rows.
            let out = (0..self.items.len())
                .filter(|&p| so_far & (1 << p) != 0 && self.key_fixed(p, 1 << j))
                .map(|p| rows * item.rows / self.items[p].base)
                .min_by(|a, b| cmp(*a, *b))
                .unwrap_or_else(|| many_to_many(rows, item.rows));
            (out, item.base)
        };
        Step {
            rows: out,
            cost: read + out,
            lookup,
            connected: true,
        }
    }

    /// The greedy order from item `first`, and its cost.
    fn order_from(&self, first: usize) -> (Vec<usize>, f64) {
        let n = self.items.len();
        let item = &self.items[first];
        let (mut order, mut rows, mut cost) = (vec![first], item.rows, item.base);
        let mut so_far: u64 = 1 << first;
        while order.len() < n {
            let next = (0..n)
                .filter(|&j| so_far & (1 << j) == 0)
                .map(|j| (j, self.step(so_far, rows, j)))
                .min_by(|(a, sa), (b, sb)| {
                    // Connected first; then the cheapest step, a lookup,
                    // fewer rows after, the smaller item, FROM order. An
                    // unconnected item: the smallest.
                    let by_size = cmp(self.items[*a].rows, self.items[*b].rows).then(a.cmp(b));
                    sb.connected
                        .cmp(&sa.connected)
                        .then_with(|| match sa.connected {
                            true => cmp(sa.cost, sb.cost)
                                .then(sb.lookup.cmp(&sa.lookup))
                                .then(cmp(sa.rows, sb.rows))
                                .then(by_size),
                            false => by_size,
                        })
                });
            let Some((j, s)) = next else {
                break;
            };
            order.push(j);
            so_far |= 1 << j;
            rows = s.rows;
            cost += s.cost;
        }
        (order, cost)
    }

    /// The cheapest of the greedy orders from each item (ties: FROM
    /// order of the first item).
    fn order(&self) -> Vec<usize> {
        let mut best: Option<(Vec<usize>, f64)> = None;
        for first in 0..self.items.len() {
            let (order, cost) = self.order_from(first);
            if best.as_ref().is_none_or(|(_, c)| cmp(cost, *c).is_lt()) {
                best = Some((order, cost));
            }
        }
        best.map(|(order, _)| order).unwrap_or_default()
    }
}

/// The items (bits) the program columns `cols` of the FROM-order row
/// fall in, with `offsets[i]` the first column of item `i`.
fn items_of(cols: &[u32], offsets: &[usize]) -> u64 {
    cols.iter()
        .map(|&c| 1u64 << (offsets.partition_point(|&o| o <= c as usize) - 1))
        .fold(0, |a, b| a | b)
}

/// Estimated rows of a FROM item before its terms.
pub(crate) fn base_rows(input: &Input) -> f64 {
    let rows = match input {
        Input::Table(ts) => {
            if ts.meta().schema.primary_key.is_empty() {
                ts.vids.vid_count() as f64
            } else {
                ts.pk.get().map_or(0, |p| p.len()) as f64
            }
        }
        Input::Rows(r) => r.row_count().map_or(DEFAULT_ROWS, |n| n as f64),
        Input::Derived(_) | Input::SetOp(_) => DEFAULT_ROWS,
    };
    rows.max(1.0)
}

/// The order to join the FROM items `inputs` in (their FROM positions),
/// `scopes` their columns and `conds` the WHERE terms; FROM order for
/// fewer than three items.
pub(crate) fn choose(inputs: &[&Input], scopes: &[Scope], conds: &[Expr]) -> Vec<usize> {
    let n = inputs.len();
    if !(3..=64).contains(&n) {
        return (0..n).collect();
    }
    let mut full = scopes[0].no_columns();
    let mut offsets = Vec::with_capacity(n);
    for s in scopes {
        offsets.push(full.columns.len());
        full.columns.extend(s.columns.iter().cloned());
    }
    // Scratch parameter types: estimating must not type a parameter.
    let mut scratch = Vec::new();
    let mut refs = |e: &Expr| -> Option<u64> {
        let (p, _) = compile(e, &full, &mut scratch).ok()?;
        Some(items_of(&p.columns(), &offsets))
    };
    let mut own: Vec<Vec<&Expr>> = vec![Vec::new(); n];
    let mut edges = Vec::new();
    for c in conds.iter().filter(|c| copyable(c)) {
        let Some(items) = refs(c) else {
            continue;
        };
        if items.count_ones() == 1 {
            own[items.trailing_zeros() as usize].push(c);
            continue;
        }
        let Expr::BinaryOp {
            left,
            op: BinaryOperator::Eq,
            right,
        } = c
        else {
            continue;
        };
        let (Some(l), Some(r)) = (refs(left), refs(right)) else {
            continue;
        };
        if l == 0 || r == 0 || l & r != 0 {
            continue;
        }
        let side = |e: &Expr, items: u64| Side {
            items,
            column: column_of(e, &full).map(|c| {
                let i = offsets.partition_point(|&o| o <= c) - 1;
                (i, c - offsets[i])
            }),
        };
        edges.push(Edge([side(left, l), side(right, r)]));
    }
    let items = (0..n)
        .map(|i| {
            let base = base_rows(inputs[i]);
            let (pk, fixed) = match inputs[i] {
                Input::Table(ts) => {
                    let terms: Vec<Expr> = own[i].iter().map(|e| (*e).clone()).collect();
                    let fixed = pk_terms(ts, &terms, &scopes[i], &mut scratch)
                        .map(|k| k.iter().map(Option::is_some).collect())
                        .unwrap_or_default();
                    (ts.meta().schema.primary_key.clone(), fixed)
                }
                Input::Derived(_) | Input::Rows(_) | Input::SetOp(_) => (Vec::new(), Vec::new()),
            };
            let rows = if !pk.is_empty() && fixed.len() == pk.len() && fixed.iter().all(|f| *f) {
                1.0
            } else {
                own[i].iter().fold(base, |rows, t| {
                    rows * match t {
                        Expr::BinaryOp {
                            op: BinaryOperator::Eq,
                            ..
                        } => EQ_SELECTIVITY,
                        _ => OTHER_SELECTIVITY,
                    }
                })
            };
            Item {
                base,
                rows: rows.max(1.0),
                fixed: if fixed.len() == pk.len() {
                    fixed
                } else {
                    vec![false; pk.len()]
                },
                pk,
            }
        })
        .collect();
    Planner { items, edges }.order()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(base: f64, rows: f64, pk: &[usize]) -> Item {
        Item {
            base,
            rows,
            pk: pk.to_vec(),
            fixed: vec![false; pk.len()],
        }
    }

    /// `a.ca = b.cb` between plain columns; `None`: an expression side.
    fn edge(a: usize, ca: Option<usize>, b: usize, cb: Option<usize>) -> Edge {
        Edge([
            Side {
                items: 1 << a,
                column: ca.map(|c| (a, c)),
            },
            Side {
                items: 1 << b,
                column: cb.map(|c| (b, c)),
            },
        ])
    }

    #[test]
    fn ch_q21_starts_at_stock_and_never_multiplies_supplier_by_order_line() {
        // FROM supplier(0), order_line l1(1), orders(2), stock(3), nation(4)
        let items = vec![
            item(10_000.0, 10_000.0, &[0]),
            item(2_338.0, 2_338.0, &[0, 1, 2, 3]),
            item(240.0, 240.0, &[0, 1, 2]),
            item(400.0, 400.0, &[0, 1]),
            item(62.0, 6.2, &[0]),
        ];
        let edges = vec![
            // ol_o_id = o_id, ol_w_id = o_w_id, ol_d_id = o_d_id
            edge(1, Some(10), 2, Some(0)),
            edge(1, Some(11), 2, Some(1)),
            edge(1, Some(12), 2, Some(2)),
            // ol_w_id = s_w_id, ol_i_id = s_i_id
            edge(1, Some(11), 3, Some(0)),
            edge(1, Some(13), 3, Some(1)),
            // mod(s_w_id * s_i_id, 10000) = su_suppkey
            edge(3, None, 0, Some(0)),
            // su_nationkey = n_nationkey
            edge(0, Some(3), 4, Some(0)),
        ];
        let order = Planner { items, edges }.order();
        assert_eq!(order, vec![3, 0, 4, 1, 2]);
    }

    #[test]
    fn ch_q5_never_joins_customers_to_suppliers_by_nation() {
        // FROM customer(0), orders(1), order_line(2), stock(3),
        // supplier(4), nation(5), region(6) at a twentieth of one
        // warehouse (o_entry_d >= … filters orders).
        let items = vec![
            item(1_500.0, 1_500.0, &[0, 1, 2]),
            item(1_500.0, 450.0, &[0, 1, 2]),
            item(15_000.0, 15_000.0, &[0, 1, 2, 3]),
            item(5_000.0, 5_000.0, &[0, 1]),
            item(10_000.0, 10_000.0, &[0]),
            item(62.0, 62.0, &[0]),
            item(5.0, 1.0, &[0]),
        ];
        let edges = vec![
            // c_w_id = o_w_id, c_d_id = o_d_id, c_id = o_c_id
            edge(0, Some(0), 1, Some(0)),
            edge(0, Some(1), 1, Some(1)),
            edge(0, Some(2), 1, Some(3)),
            // ol_w_id = o_w_id, ol_d_id = o_d_id, ol_o_id = o_id
            edge(2, Some(0), 1, Some(0)),
            edge(2, Some(1), 1, Some(1)),
            edge(2, Some(2), 1, Some(2)),
            // ol_w_id = s_w_id, ol_i_id = s_i_id
            edge(2, Some(0), 3, Some(0)),
            edge(2, Some(4), 3, Some(1)),
            // mod(s_w_id * s_i_id, 10000) = su_suppkey
            edge(3, None, 4, Some(0)),
            // ascii(substring(c_state from 1 for 1)) = su_nationkey
            edge(0, None, 4, Some(1)),
            // su_nationkey = n_nationkey, n_regionkey = r_regionkey
            edge(4, Some(1), 5, Some(0)),
            edge(5, Some(1), 6, Some(0)),
        ];
        let order = Planner { items, edges }.order();
        // Customers join through their orders, never as the many-to-many
        // partner of the suppliers of a nation.
        let at = |i: usize| order.iter().position(|&x| x == i).unwrap();
        assert!(at(0) == 0 || at(1) < at(0), "{order:?}");
    }

    #[test]
    fn an_unconnected_item_comes_last_and_ties_keep_from_order() {
        // a(0) and c(2) join; b(1) joins nothing.
        let items = vec![
            item(100.0, 100.0, &[0]),
            item(5.0, 5.0, &[0]),
            item(100.0, 100.0, &[0]),
        ];
        let edges = vec![edge(0, Some(1), 2, Some(1))];
        let order = Planner { items, edges }.order();
        assert_eq!(order, vec![0, 2, 1]);
        // Nothing connected at all: the smallest first, then FROM order.
        let items = vec![
            item(10.0, 10.0, &[]),
            item(10.0, 10.0, &[]),
            item(10.0, 10.0, &[]),
        ];
        let order = Planner {
            items,
            edges: Vec::new(),
        }
        .order();
        assert_eq!(order, vec![0, 1, 2]);
    }

    #[test]
    fn few_rows_look_a_big_table_up_by_key() {
        // big(0) keyed by id, joined from filtered small(1) on its key;
        // mid(2) joins small.
        let mut small = item(1_000.0, 3.0, &[0]);
        small.fixed = vec![false];
        let items = vec![
            item(1_000_000.0, 1_000_000.0, &[0]),
            small,
            item(500.0, 500.0, &[]),
        ];
        let edges = vec![edge(1, Some(2), 0, Some(0)), edge(2, Some(0), 1, Some(1))];
        let order = Planner { items, edges }.order();
        assert_eq!(order[..2], [1, 0]);
    }

    #[test]
    fn item_of_a_column_follows_the_offsets() {
        // Items of 3, 0 and 2 columns.
        let offsets = [0, 3, 3];
        assert_eq!(items_of(&[0, 2], &offsets), 0b001);
        assert_eq!(items_of(&[3], &offsets), 0b100);
        assert_eq!(items_of(&[1, 4], &offsets), 0b101);
        assert_eq!(items_of(&[], &offsets), 0);
    }
}
