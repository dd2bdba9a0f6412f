//! The five TPC-C transactions (clauses 2.4–2.8) as a client runs them:
//! inputs drawn per clause 2.x.1, then every statement a prepared one
//! inside BEGIN … COMMIT. A row that is read and then changed is read
//! with SELECT … FOR UPDATE (the district and stock rows of New-Order;
//! the warehouse, district and customer rows of Payment; the oldest
//! NEW_ORDER row of a district in Delivery, which is then deleted).
//! A transaction that fails is rolled back by the caller, which runs the
//! same inputs again after a 40001 or 40P01.

use rand::rngs::SmallRng;

use ndpdb_formats::Value;

use super::db::{self, cents, decimal, exec, int, money, query, text, DbError, Rows};
use super::random::{last_name, nurand, uniform, Constants};
use super::{Scale, DISTRICTS};
use crate::target::{Conn, Stmt};

/// The transaction types, in the order reports list them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    NewOrder,
    Payment,
    OrderStatus,
    Delivery,
    StockLevel,
}

impl Kind {
    pub const ALL: [Kind; 5] = [
        Kind::NewOrder,
        Kind::Payment,
        Kind::OrderStatus,
        Kind::Delivery,
        Kind::StockLevel,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::NewOrder => "New-Order",
            Kind::Payment => "Payment",
            Kind::OrderStatus => "Order-Status",
            Kind::Delivery => "Delivery",
            Kind::StockLevel => "Stock-Level",
        }
    }

    /// The standard mix (clause 5.2.3): 45 % New-Order, 43 % Payment, 4 %
    /// each of the others, from `r` uniform in [1, 100].
    pub fn from_mix(r: i64) -> Kind {
        match r {
            ..=45 => Kind::NewOrder,
            46..=88 => Kind::Payment,
            89..=92 => Kind::OrderStatus,
            93..=96 => Kind::Delivery,
            _ => Kind::StockLevel,
        }
    }
}

/// The prepared statements, by role; [`STATEMENTS`] holds their SQL in
/// the same order.
#[derive(Clone, Copy, Debug)]
pub enum S {
    Begin,
    Commit,
    Rollback,
    NoGetCustomer,
    NoGetWarehouse,
    NoGetDistrict,
    NoUpdateDistrict,
    NoInsertOrder,
    NoInsertNewOrder,
    NoGetItem,
    NoGetStock,
    NoUpdateStock,
    NoInsertOrderLine,
    PayGetWarehouse,
    PayUpdateWarehouse,
    PayGetDistrict,
    PayUpdateDistrict,
    PayGetCustomerById,
    PayGetCustomerByName,
    PayGetCustomerData,
    PayUpdateCustomerData,
    PayUpdateCustomer,
    PayInsertHistory,
    OsGetCustomerById,
    OsGetCustomerByName,
    OsGetNewestOrder,
    OsGetOrderLines,
    DlGetNewOrder,
    DlDeleteNewOrder,
    DlGetCustomerId,
    DlUpdateCarrier,
    DlUpdateDeliveryDate,
    DlSumAmount,
    DlUpdateCustomer,
    SlGetDistrict,
    SlCountStock,
}

/// (name, SQL) of every statement, in the order of [`S`].
pub const STATEMENTS: [(&str, &str); 36] = [
    ("begin", "BEGIN"),
    ("commit", "COMMIT"),
    ("rollback", "ROLLBACK"),
    (
        "new-order: customer",
        "SELECT c_discount, c_last, c_credit FROM customer \
         WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3",
    ),
    (
        "new-order: warehouse",
        "SELECT w_tax FROM warehouse WHERE w_id = $1",
    ),
    (
        "new-order: district",
        "SELECT d_next_o_id, d_tax FROM district WHERE d_w_id = $1 AND d_id = $2 FOR UPDATE",
    ),
    (
        "new-order: update district",
        "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = $1 AND d_id = $2",
    ),
    (
        "new-order: insert order",
        "INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_ol_cnt, o_all_local) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    ),
    (
        "new-order: insert new_order",
        "INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES ($1, $2, $3)",
    ),
    (
        "new-order: item",
        "SELECT i_price, i_name, i_data FROM item WHERE i_id = $1",
    ),
    (
        "new-order: stock",
        "SELECT s_quantity, s_data, s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, \
         s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10 FROM stock \
         WHERE s_i_id = $1 AND s_w_id = $2 FOR UPDATE",
    ),
    (
        "new-order: update stock",
        "UPDATE stock SET s_quantity = $1, s_ytd = s_ytd + $2, s_order_cnt = s_order_cnt + 1, \
         s_remote_cnt = s_remote_cnt + $3 WHERE s_i_id = $4 AND s_w_id = $5",
    ),
    (
        "new-order: insert order_line",
        "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, \
         ol_quantity, ol_amount, ol_dist_info) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    ),
    (
        "payment: warehouse",
        "SELECT w_name, w_street_1, w_street_2, w_city, w_state, w_zip FROM warehouse \
         WHERE w_id = $1 FOR UPDATE",
    ),
    (
        "payment: update warehouse",
        "UPDATE warehouse SET w_ytd = w_ytd + $1 WHERE w_id = $2",
    ),
    (
        "payment: district",
        "SELECT d_name, d_street_1, d_street_2, d_city, d_state, d_zip FROM district \
         WHERE d_w_id = $1 AND d_id = $2 FOR UPDATE",
    ),
    (
        "payment: update district",
        "UPDATE district SET d_ytd = d_ytd + $1 WHERE d_w_id = $2 AND d_id = $3",
    ),
    (
        "payment: customer by id",
        "SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, \
         c_phone, c_credit, c_credit_lim, c_discount, c_balance, c_ytd_payment, c_payment_cnt, \
         c_since FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3 FOR UPDATE",
    ),
    (
        "payment: customers by last name",
        "SELECT c_first, c_middle, c_id, c_street_1, c_street_2, c_city, c_state, c_zip, \
         c_phone, c_credit, c_credit_lim, c_discount, c_balance, c_ytd_payment, c_payment_cnt, \
         c_since FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_last = $3 \
         ORDER BY c_first FOR UPDATE",
    ),
    (
        "payment: customer data",
        "SELECT c_data FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3",
    ),
    (
        "payment: update customer (bad credit)",
        "UPDATE customer SET c_balance = $1, c_ytd_payment = $2, c_payment_cnt = $3, c_data = $4 \
         WHERE c_w_id = $5 AND c_d_id = $6 AND c_id = $7",
    ),
    (
        "payment: update customer",
        "UPDATE customer SET c_balance = $1, c_ytd_payment = $2, c_payment_cnt = $3 \
         WHERE c_w_id = $4 AND c_d_id = $5 AND c_id = $6",
    ),
    (
        "payment: insert history",
        "INSERT INTO history (h_c_d_id, h_c_w_id, h_c_id, h_d_id, h_w_id, h_date, h_amount, \
         h_data) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    ),
    (
        "order-status: customer by id",
        "SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, \
         c_phone, c_credit, c_credit_lim, c_discount, c_balance, c_ytd_payment, c_payment_cnt, \
         c_since FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3",
    ),
    (
        "order-status: customers by last name",
        "SELECT c_first, c_middle, c_id, c_street_1, c_street_2, c_city, c_state, c_zip, \
         c_phone, c_credit, c_credit_lim, c_discount, c_balance, c_ytd_payment, c_payment_cnt, \
         c_since FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_last = $3 \
         ORDER BY c_first",
    ),
    (
        "order-status: newest order",
        "SELECT o_id, o_carrier_id, o_entry_d FROM orders \
         WHERE o_w_id = $1 AND o_d_id = $2 AND o_c_id = $3 ORDER BY o_id DESC LIMIT 1",
    ),
    (
        "order-status: order lines",
        "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line \
         WHERE ol_o_id = $1 AND ol_d_id = $2 AND ol_w_id = $3",
    ),
    (
        "delivery: oldest new order",
        "SELECT no_o_id FROM new_order WHERE no_d_id = $1 AND no_w_id = $2 \
         ORDER BY no_o_id ASC LIMIT 1 FOR UPDATE",
    ),
    (
        "delivery: delete new order",
        "DELETE FROM new_order WHERE no_o_id = $1 AND no_d_id = $2 AND no_w_id = $3",
    ),
    (
        "delivery: order's customer",
        "SELECT o_c_id FROM orders WHERE o_id = $1 AND o_d_id = $2 AND o_w_id = $3",
    ),
    (
        "delivery: update carrier",
        "UPDATE orders SET o_carrier_id = $1 WHERE o_id = $2 AND o_d_id = $3 AND o_w_id = $4",
    ),
    (
        "delivery: update delivery date",
        "UPDATE order_line SET ol_delivery_d = $1 \
         WHERE ol_o_id = $2 AND ol_d_id = $3 AND ol_w_id = $4",
    ),
    (
        "delivery: order total",
        "SELECT SUM(ol_amount) AS ol_total FROM order_line \
         WHERE ol_o_id = $1 AND ol_d_id = $2 AND ol_w_id = $3",
    ),
    (
        "delivery: update customer",
        "UPDATE customer SET c_balance = c_balance + $1, c_delivery_cnt = c_delivery_cnt + 1 \
         WHERE c_w_id = $2 AND c_d_id = $3 AND c_id = $4",
    ),
    (
        "stock-level: district",
        "SELECT d_next_o_id FROM district WHERE d_w_id = $1 AND d_id = $2",
    ),
    (
        "stock-level: low stock",
        "SELECT COUNT(DISTINCT (s_i_id)) AS stock_count FROM order_line, stock \
         WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id < $3 AND ol_o_id >= $4 \
         AND s_w_id = $5 AND s_i_id = ol_i_id AND s_quantity < $6",
    ),
];

/// A failed transaction: the statement and its error.
#[derive(Clone, Debug)]
pub struct Failure {
    pub statement: &'static str,
    pub error: DbError,
}

impl Failure {
    pub fn code(&self) -> &str {
        &self.error.code
    }
}

/// How a transaction ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Committed,
    /// The 1 % of New-Orders with an unused item, rolled back on purpose.
    RolledBack,
}

/// SQLSTATE of a row a transaction needs that is not there (P0002,
/// "no data found").
pub const NO_ROW: &str = "P0002";

/// What the workload is run against.
#[derive(Clone, Copy, Debug)]
pub struct Workload {
    pub warehouses: u32,
    pub scale: Scale,
    pub consts: Constants,
}

/// A transaction's inputs (clauses 2.4.1, 2.5.1, 2.6.1, 2.7.1, 2.8.1).
#[derive(Clone, Debug)]
pub enum Input {
    NewOrder {
        d: i32,
        c: i32,
        /// (item, supplying warehouse, quantity) per order line.
        lines: Vec<(i32, i32, i32)>,
        /// The last item is unused: the transaction rolls back.
        rollback: bool,
    },
    Payment {
        d: i32,
        c_w: i32,
        c_d: i32,
        customer: Customer,
        /// H_AMOUNT in cents.
        amount: i64,
    },
    OrderStatus {
        d: i32,
        customer: Customer,
    },
    Delivery {
        carrier: i32,
    },
    StockLevel {
        threshold: i32,
    },
}

impl Input {
    pub fn kind(&self) -> Kind {
        match self {
            Input::NewOrder { .. } => Kind::NewOrder,
            Input::Payment { .. } => Kind::Payment,
            Input::OrderStatus { .. } => Kind::OrderStatus,
            Input::Delivery { .. } => Kind::Delivery,
            Input::StockLevel { .. } => Kind::StockLevel,
        }
    }
}

/// A customer chosen by number or by last name.
#[derive(Clone, Debug)]
pub enum Customer {
    Id(i32),
    LastName(String),
}

/// One client (terminal): its session, statements, home warehouse and
/// the district its Stock-Level transactions use.
pub struct Client {
    pub conn: Conn,
    stmts: Vec<Stmt>,
    pub home: i32,
    pub stock_level_district: i32,
    w: Workload,
}

impl Client {
    /// Prepares every statement; the error lists each one refused.
    pub fn new(
        mut conn: Conn,
        home: i32,
        stock_level_district: i32,
        w: Workload,
    ) -> Result<Client, String> {
        let mut stmts = Vec::new();
        let mut refused = Vec::new();
        for (name, sql) in STATEMENTS {
            match db::prepare(&mut conn, sql) {
                Ok(s) => stmts.push(s),
                Err(e) => refused.push(format!("{name}: {sql}\n    → {e}")),
            }
        }
        if !refused.is_empty() {
            return Err(format!(
                "{} of {} statements refused at prepare:\n  {}",
                refused.len(),
                STATEMENTS.len(),
                refused.join("\n  ")
            ));
        }
        Ok(Client {
            conn,
            stmts,
            home,
            stock_level_district,
            w,
        })
    }

    fn customer(&self, rng: &mut SmallRng) -> Customer {
        if uniform(rng, 1, 100) <= 60 {
            let names = self.w.scale.last_names() as i64;
            Customer::LastName(last_name(nurand(
                rng,
                255,
                0,
                names - 1,
                self.w.consts.c_last_run,
            )))
        } else {
            Customer::Id(self.customer_id(rng))
        }
    }

    fn customer_id(&self, rng: &mut SmallRng) -> i32 {
        nurand(
            rng,
            1023,
            1,
            self.w.scale.customers as i64,
            self.w.consts.c_id,
        ) as i32
    }

    /// A warehouse other than the home one (the home one if it is the
    /// only one).
    fn remote(&self, rng: &mut SmallRng) -> i32 {
        let n = self.w.warehouses as i64;
        if n == 1 {
            return self.home;
        }
        loop {
            let w = uniform(rng, 1, n) as i32;
            if w != self.home {
                return w;
            }
        }
    }

    /// Draws the inputs of a transaction of `kind`.
    pub fn input(&self, kind: Kind, rng: &mut SmallRng) -> Input {
        let district = |rng: &mut SmallRng| uniform(rng, 1, DISTRICTS as i64) as i32;
        match kind {
            Kind::NewOrder => {
                let d = district(rng);
                let c = self.customer_id(rng);
                let count = uniform(rng, 5, 15);
                let rollback = uniform(rng, 1, 100) == 1;
                let items = self.w.scale.items as i64;
                let mut lines = Vec::with_capacity(count as usize);
                for n in 1..=count {
                    let item = if rollback && n == count {
                        items as i32 + 1
                    } else {
                        nurand(rng, 8191, 1, items, self.w.consts.ol_i_id) as i32
                    };
                    let supply = if self.w.warehouses > 1 && uniform(rng, 1, 100) == 1 {
                        self.remote(rng)
                    } else {
                        self.home
                    };
                    lines.push((item, supply, uniform(rng, 1, 10) as i32));
                }
                Input::NewOrder {
                    d,
                    c,
                    lines,
                    rollback,
                }
            }
            Kind::Payment => {
                let d = district(rng);
                let (c_w, c_d) = if self.w.warehouses > 1 && uniform(rng, 1, 100) > 85 {
                    (self.remote(rng), district(rng))
                } else {
                    (self.home, d)
                };
                let customer = self.customer(rng);
                Input::Payment {
                    d,
                    c_w,
                    c_d,
                    customer,
                    amount: uniform(rng, 100, 500_000),
                }
            }
            Kind::OrderStatus => Input::OrderStatus {
                d: district(rng),
                customer: self.customer(rng),
            },
            Kind::Delivery => Input::Delivery {
                carrier: uniform(rng, 1, 10) as i32,
            },
            Kind::StockLevel => Input::StockLevel {
                threshold: uniform(rng, 10, 20) as i32,
            },
        }
    }

    fn q(&mut self, s: S, params: &[Value]) -> Result<Rows, Failure> {
        query(&mut self.conn, &self.stmts[s as usize], params).map_err(|error| Failure {
            statement: STATEMENTS[s as usize].0,
            error,
        })
    }

    fn e(&mut self, s: S, params: &[Value]) -> Result<u64, Failure> {
        exec(&mut self.conn, &self.stmts[s as usize], params).map_err(|error| Failure {
            statement: STATEMENTS[s as usize].0,
            error,
        })
    }

    /// The first row of a result, or a P0002 failure naming what is missing.
    fn one(
        &mut self,
        s: S,
        params: &[Value],
        what: impl FnOnce() -> String,
    ) -> Result<Vec<Value>, Failure> {
        match self.q(s, params)?.into_iter().next() {
            Some(row) => Ok(row),
            None => Err(missing(s, what())),
        }
    }

    /// Ends a failed transaction (errors ignored: the session may have
    /// ended it already).
    pub fn rollback(&mut self) {
        let _ = self.e(S::Rollback, &[]);
    }

    /// Runs a transaction in BEGIN … COMMIT. On a failure the transaction
    /// is left for [`Client::rollback`].
    pub fn run(&mut self, input: &Input) -> Result<Outcome, Failure> {
        self.e(S::Begin, &[])?;
        let outcome = match input {
            Input::NewOrder {
                d,
                c,
                lines,
                rollback,
            } => self.new_order(*d, *c, lines, *rollback)?,
            Input::Payment {
                d,
                c_w,
                c_d,
                customer,
                amount,
            } => self.payment(*d, *c_w, *c_d, customer, *amount)?,
            Input::OrderStatus { d, customer } => self.order_status(*d, customer)?,
            Input::Delivery { carrier } => self.delivery(*carrier)?,
            Input::StockLevel { threshold } => self.stock_level(*threshold)?,
        };
        match outcome {
            Outcome::Committed => {
                self.e(S::Commit, &[])?;
            }
            Outcome::RolledBack => {
                self.e(S::Rollback, &[])?;
            }
        }
        Ok(outcome)
    }

    fn new_order(
        &mut self,
        d: i32,
        c: i32,
        lines: &[(i32, i32, i32)],
        rollback: bool,
    ) -> Result<Outcome, Failure> {
        let w = self.home;
        let (wv, dv) = (Value::Int(w), Value::Int(d));
        let cust = self.one(
            S::NoGetCustomer,
            &[wv.clone(), dv.clone(), Value::Int(c)],
            || format!("customer {w}/{d}/{c}"),
        )?;
        let discount = decimal(&cust[0]).map_err(|e| fail(S::NoGetCustomer, e))?;
        let wh = self.one(S::NoGetWarehouse, std::slice::from_ref(&wv), || {
            format!("warehouse {w}")
        })?;
        let w_tax = decimal(&wh[0]).map_err(|e| fail(S::NoGetWarehouse, e))?;
        let dist = self.one(S::NoGetDistrict, &[wv.clone(), dv.clone()], || {
            format!("district {w}/{d}")
        })?;
        let o_id = int(&dist[0]).map_err(|e| fail(S::NoGetDistrict, e))? as i32;
        let d_tax = decimal(&dist[1]).map_err(|e| fail(S::NoGetDistrict, e))?;
        if self.e(S::NoUpdateDistrict, &[wv.clone(), dv.clone()])? != 1 {
            return Err(missing(S::NoUpdateDistrict, format!("district {w}/{d}")));
        }
        let all_local = lines.iter().all(|l| l.1 == w) as i32;
        self.e(
            S::NoInsertOrder,
            &[
                Value::Int(o_id),
                dv.clone(),
                wv.clone(),
                Value::Int(c),
                db::now(),
                Value::Int(lines.len() as i32),
                Value::Int(all_local),
            ],
        )?;
        self.e(
            S::NoInsertNewOrder,
            &[Value::Int(o_id), dv.clone(), wv.clone()],
        )?;
        let mut total = 0i64;
        for (n, &(item, supply, quantity)) in lines.iter().enumerate() {
            let Some(it) = self
                .q(S::NoGetItem, &[Value::Int(item)])?
                .into_iter()
                .next()
            else {
                if rollback && n + 1 == lines.len() {
                    return Ok(Outcome::RolledBack);
                }
                return Err(missing(S::NoGetItem, format!("item {item}")));
            };
            let price = cents(&it[0]).map_err(|e| fail(S::NoGetItem, e))?;
            let stock = self.one(
                S::NoGetStock,
                &[Value::Int(item), Value::Int(supply)],
                || format!("stock {supply}/{item}"),
            )?;
            let s_quantity = int(&stock[0]).map_err(|e| fail(S::NoGetStock, e))? as i32;
            let new_quantity = if s_quantity - quantity >= 10 {
                s_quantity - quantity
            } else {
                s_quantity - quantity + 91
            };
            self.e(
                S::NoUpdateStock,
                &[
                    Value::Int(new_quantity),
                    Value::Int(quantity),
                    Value::Int((supply != w) as i32),
                    Value::Int(item),
                    Value::Int(supply),
                ],
            )?;
            let amount = quantity as i64 * price;
            total += amount;
            // Brand/generic (clause 2.4.2.2): shown to the terminal only.
            let _brand = text(&it[2]).contains("ORIGINAL") && text(&stock[1]).contains("ORIGINAL");
            let dist_info = stock[1 + d as usize].clone();
            self.e(
                S::NoInsertOrderLine,
                &[
                    Value::Int(o_id),
                    dv.clone(),
                    wv.clone(),
                    Value::Int(n as i32 + 1),
                    Value::Int(item),
                    Value::Int(supply),
                    Value::Int(quantity),
                    money(amount),
                    dist_info,
                ],
            )?;
        }
        // The total the terminal shows: Σ amounts × (1 − c_discount) × (1 + w_tax + d_tax).
        let _total = total as f64 / 100.0
            * (1.0 - discount.to_f64())
            * (1.0 + w_tax.to_f64() + d_tax.to_f64());
        Ok(Outcome::Committed)
    }

    /// The customer a Payment or Order-Status is for: by number, or the
    /// middle one (position ⌈n/2⌉) of those with the last name sorted by
    /// first name. Returns its number and row.
    fn find_customer(
        &mut self,
        by_id: S,
        by_name: S,
        c_w: i32,
        c_d: i32,
        customer: &Customer,
    ) -> Result<(i32, Vec<Value>), Failure> {
        match customer {
            Customer::Id(c) => {
                let row = self.one(
                    by_id,
                    &[Value::Int(c_w), Value::Int(c_d), Value::Int(*c)],
                    || format!("customer {c_w}/{c_d}/{c}"),
                )?;
                Ok((*c, row))
            }
            Customer::LastName(last) => {
                let mut rows = self.q(
                    by_name,
                    &[Value::Int(c_w), Value::Int(c_d), Value::Text(last.clone())],
                )?;
                if rows.is_empty() {
                    return Err(missing(
                        by_name,
                        format!("customer {c_w}/{c_d} named {last}"),
                    ));
                }
                let row = rows.swap_remove(rows.len().div_ceil(2) - 1);
                let c = int(&row[2]).map_err(|e| fail(by_name, e))? as i32;
                Ok((c, row))
            }
        }
    }

    fn payment(
        &mut self,
        d: i32,
        c_w: i32,
        c_d: i32,
        customer: &Customer,
        amount: i64,
    ) -> Result<Outcome, Failure> {
        let w = self.home;
        let (wv, dv) = (Value::Int(w), Value::Int(d));
        let wh = self.one(S::PayGetWarehouse, std::slice::from_ref(&wv), || {
            format!("warehouse {w}")
        })?;
        if self.e(S::PayUpdateWarehouse, &[money(amount), wv.clone()])? != 1 {
            return Err(missing(S::PayUpdateWarehouse, format!("warehouse {w}")));
        }
        let di = self.one(S::PayGetDistrict, &[wv.clone(), dv.clone()], || {
            format!("district {w}/{d}")
        })?;
        if self.e(
            S::PayUpdateDistrict,
            &[money(amount), wv.clone(), dv.clone()],
        )? != 1
        {
            return Err(missing(S::PayUpdateDistrict, format!("district {w}/{d}")));
        }
        let (c, row) = self.find_customer(
            S::PayGetCustomerById,
            S::PayGetCustomerByName,
            c_w,
            c_d,
            customer,
        )?;
        let by = match customer {
            Customer::Id(_) => S::PayGetCustomerById,
            Customer::LastName(_) => S::PayGetCustomerByName,
        };
        let balance = cents(&row[12]).map_err(|e| fail(by, e))? - amount;
        let ytd = cents(&row[13]).map_err(|e| fail(by, e))? + amount;
        let count = int(&row[14]).map_err(|e| fail(by, e))? + 1;
        let key = [Value::Int(c_w), Value::Int(c_d), Value::Int(c)];
        let changed = if text(&row[9]) == "BC" {
            let data = self.one(S::PayGetCustomerData, &key, || {
                format!("customer {c_w}/{c_d}/{c}")
            })?;
            let mut new_data = format!(
                "{c} {c_d} {c_w} {d} {w} {} | {}",
                super::random::money(amount),
                text(&data[0])
            );
            new_data.truncate(500);
            let mut params = vec![
                money(balance),
                money(ytd),
                Value::Int(count as i32),
                Value::Text(new_data),
            ];
            params.extend(key);
            self.e(S::PayUpdateCustomerData, &params)?
        } else {
            let mut params = vec![money(balance), money(ytd), Value::Int(count as i32)];
            params.extend(key);
            self.e(S::PayUpdateCustomer, &params)?
        };
        if changed != 1 {
            return Err(missing(
                S::PayUpdateCustomer,
                format!("customer {c_w}/{c_d}/{c}"),
            ));
        }
        let short = |s: &str| s.chars().take(10).collect::<String>();
        let h_data = format!("{}    {}", short(text(&wh[0])), short(text(&di[0])));
        self.e(
            S::PayInsertHistory,
            &[
                Value::Int(c_d),
                Value::Int(c_w),
                Value::Int(c),
                dv,
                wv,
                db::now(),
                money(amount),
                Value::Text(h_data),
            ],
        )?;
        Ok(Outcome::Committed)
    }

    fn order_status(&mut self, d: i32, customer: &Customer) -> Result<Outcome, Failure> {
        let w = self.home;
        let (c, _row) =
            self.find_customer(S::OsGetCustomerById, S::OsGetCustomerByName, w, d, customer)?;
        let order = self.one(
            S::OsGetNewestOrder,
            &[Value::Int(w), Value::Int(d), Value::Int(c)],
            || format!("an order of customer {w}/{d}/{c}"),
        )?;
        let o_id = int(&order[0]).map_err(|e| fail(S::OsGetNewestOrder, e))?;
        let lines = self.q(
            S::OsGetOrderLines,
            &[Value::Int(o_id as i32), Value::Int(d), Value::Int(w)],
        )?;
        if lines.is_empty() {
            return Err(missing(
                S::OsGetOrderLines,
                format!("lines of order {w}/{d}/{o_id}"),
            ));
        }
        Ok(Outcome::Committed)
    }

    fn delivery(&mut self, carrier: i32) -> Result<Outcome, Failure> {
        let w = self.home;
        let wv = Value::Int(w);
        let now = db::now();
        for d in 1..=DISTRICTS as i32 {
            let dv = Value::Int(d);
            // A district without undelivered orders is skipped (clause 2.7.4.2).
            let Some(no) = self
                .q(S::DlGetNewOrder, &[dv.clone(), wv.clone()])?
                .into_iter()
                .next()
            else {
                continue;
            };
            let o = no[0].clone();
            int(&o).map_err(|e| fail(S::DlGetNewOrder, e))?;
            let key = [o.clone(), dv.clone(), wv.clone()];
            if self.e(S::DlDeleteNewOrder, &key)? != 1 {
                return Err(missing(
                    S::DlDeleteNewOrder,
                    format!("new order {w}/{d}/{o:?}"),
                ));
            }
            let order = self.one(S::DlGetCustomerId, &key, || format!("order {w}/{d}/{o:?}"))?;
            let c = order[0].clone();
            let mut params = vec![Value::Int(carrier)];
            params.extend(key.iter().cloned());
            if self.e(S::DlUpdateCarrier, &params)? != 1 {
                return Err(missing(S::DlUpdateCarrier, format!("order {w}/{d}/{o:?}")));
            }
            params[0] = now.clone();
            if self.e(S::DlUpdateDeliveryDate, &params)? == 0 {
                return Err(missing(
                    S::DlUpdateDeliveryDate,
                    format!("lines of order {w}/{d}/{o:?}"),
                ));
            }
            let total = self.one(S::DlSumAmount, &key, || {
                format!("lines of order {w}/{d}/{o:?}")
            })?;
            let total = match &total[0] {
                Value::Null => {
                    return Err(missing(
                        S::DlSumAmount,
                        format!("lines of order {w}/{d}/{o:?}"),
                    ))
                }
                v => Value::Numeric(decimal(v).map_err(|e| fail(S::DlSumAmount, e))?),
            };
            if self.e(S::DlUpdateCustomer, &[total, wv.clone(), dv, c])? != 1 {
                return Err(missing(
                    S::DlUpdateCustomer,
                    format!("the customer of order {w}/{d}/{o:?}"),
                ));
            }
        }
        Ok(Outcome::Committed)
    }

    fn stock_level(&mut self, threshold: i32) -> Result<Outcome, Failure> {
        let (w, d) = (self.home, self.stock_level_district);
        let dist = self.one(S::SlGetDistrict, &[Value::Int(w), Value::Int(d)], || {
            format!("district {w}/{d}")
        })?;
        let next = int(&dist[0]).map_err(|e| fail(S::SlGetDistrict, e))? as i32;
        let count = self.one(
            S::SlCountStock,
            &[
                Value::Int(w),
                Value::Int(d),
                Value::Int(next),
                Value::Int(next - 20),
                Value::Int(w),
                Value::Int(threshold),
            ],
            || "a count".into(),
        )?;
        int(&count[0]).map_err(|e| fail(S::SlCountStock, e))?;
        Ok(Outcome::Committed)
    }
}

fn fail(s: S, error: DbError) -> Failure {
    Failure {
        statement: STATEMENTS[s as usize].0,
        error,
    }
}

fn missing(s: S, what: String) -> Failure {
    fail(s, DbError::new(NO_ROW, format!("{what} not found")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mix_is_the_standard_one() {
        let mut counts = std::collections::HashMap::new();
        for r in 1..=100 {
            *counts.entry(Kind::from_mix(r)).or_insert(0) += 1;
        }
        assert_eq!(counts[&Kind::NewOrder], 45);
        assert_eq!(counts[&Kind::Payment], 43);
        assert_eq!(counts[&Kind::OrderStatus], 4);
        assert_eq!(counts[&Kind::Delivery], 4);
        assert_eq!(counts[&Kind::StockLevel], 4);
    }

    #[test]
    fn every_statement_has_its_sql() {
        assert_eq!(
            STATEMENTS[S::SlCountStock as usize].0,
            "stock-level: low stock"
        );
        assert_eq!(STATEMENTS[S::Begin as usize].1, "BEGIN");
        assert_eq!(
            STATEMENTS[S::DlGetNewOrder as usize].0,
            "delivery: oldest new order"
        );
        assert_eq!(
            STATEMENTS[S::PayInsertHistory as usize].0,
            "payment: insert history"
        );
    }
}
