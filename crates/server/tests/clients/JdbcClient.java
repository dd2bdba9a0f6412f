// Runs the PostgreSQL JDBC driver, unmodified, against an ndpdb server:
// parameterised INSERT/SELECT/UPDATE, transactions, prepared statements
// (past the driver's server-prepare threshold, where it switches to named
// statements and binary results), batches and an error's SQLSTATE.
//
// java -cp postgresql.jar JdbcClient.java PORT   (exit 0 = all checks hold)

import java.math.BigDecimal;
import java.sql.*;

public class JdbcClient {
    static void check(boolean ok, String what) {
        if (!ok) {
            System.err.println("FAILED: " + what);
            System.exit(1);
        }
    }

    public static void main(String[] args) throws Exception {
        String url = "jdbc:postgresql://127.0.0.1:" + args[0] + "/ndpdb?user=jdbc&prepareThreshold=2";
        try (Connection c = DriverManager.getConnection(url)) {
            DatabaseMetaData md = c.getMetaData();
            check(md.getDatabaseMajorVersion() == 15, "server major version 15");
            try (Statement s = c.createStatement()) {
                s.execute("CREATE TABLE jdbc_acct (id INT PRIMARY KEY, owner TEXT, balance NUMERIC(12,2), opened DATE, seen TIMESTAMP, score DOUBLE PRECISION, active BOOLEAN)");
            }
            try (PreparedStatement ins = c.prepareStatement(
                    "INSERT INTO jdbc_acct VALUES (?, ?, ?, ?, ?, ?, ?)")) {
                for (int i = 1; i <= 10; i++) {
                    ins.setInt(1, i);
                    ins.setString(2, "owner" + i);
                    ins.setBigDecimal(3, new BigDecimal(i + ".25"));
                    ins.setDate(4, Date.valueOf("2024-01-" + (10 + i)));
                    ins.setTimestamp(5, Timestamp.valueOf("2024-01-01 12:00:0" + (i % 10)));
                    ins.setDouble(6, i * 0.5);
                    ins.setBoolean(7, i % 2 == 0);
                    check(ins.executeUpdate() == 1, "insert count");
                }
            }
            // Executed more often than prepareThreshold: named statement,
            // binary transfer of int/numeric/date/timestamp/float/bool.
            try (PreparedStatement q = c.prepareStatement(
                    "SELECT id, owner, balance, opened, seen, score, active FROM jdbc_acct WHERE id = ?")) {
                for (int round = 0; round < 5; round++) {
                    for (int i = 1; i <= 10; i++) {
                        q.setInt(1, i);
                        try (ResultSet rs = q.executeQuery()) {
                            check(rs.next(), "row " + i);
                            check(rs.getInt(1) == i, "id");
                            check(rs.getString(2).equals("owner" + i), "owner");
                            check(rs.getBigDecimal(3).compareTo(new BigDecimal(i + ".25")) == 0, "balance " + rs.getBigDecimal(3));
                            check(rs.getDate(4).equals(Date.valueOf("2024-01-" + (10 + i))), "date " + rs.getDate(4));
                            check(rs.getTimestamp(5).equals(Timestamp.valueOf("2024-01-01 12:00:0" + (i % 10))), "timestamp " + rs.getTimestamp(5));
                            check(rs.getDouble(6) == i * 0.5, "double");
                            check(rs.getBoolean(7) == (i % 2 == 0), "bool");
                            check(!rs.next(), "one row");
                        }
                    }
                }
            }
            // A transaction: updates, then rollback; then one that commits.
            c.setAutoCommit(false);
            try (PreparedStatement up = c.prepareStatement(
                    "UPDATE jdbc_acct SET balance = balance + ? WHERE id <= ?")) {
                up.setBigDecimal(1, new BigDecimal("100.00"));
                up.setInt(2, 5);
                check(up.executeUpdate() == 5, "update count");
            }
            c.rollback();
            try (PreparedStatement up = c.prepareStatement(
                    "UPDATE jdbc_acct SET balance = balance - ? WHERE id = ?")) {
                up.setBigDecimal(1, new BigDecimal("0.25"));
                for (int i = 1; i <= 3; i++) {
                    up.setInt(2, i);
                    up.addBatch();
                }
                int[] counts = up.executeBatch();
                check(counts.length == 3 && counts[0] == 1, "batch counts");
            }
            c.commit();
            c.setAutoCommit(true);
            try (Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("SELECT SUM(balance), COUNT(*) FROM jdbc_acct")) {
                check(rs.next(), "sum row");
                // 1..10 + 10×0.25 − 3×0.25
                check(rs.getBigDecimal(1).compareTo(new BigDecimal("56.75")) == 0, "sum " + rs.getBigDecimal(1));
                check(rs.getLong(2) == 10, "count");
            }
            // An error carries its SQLSTATE; the connection stays usable.
            try (Statement s = c.createStatement()) {
                s.execute("INSERT INTO jdbc_acct (id) VALUES (1)");
                check(false, "duplicate key must fail");
            } catch (SQLException e) {
                check("23505".equals(e.getSQLState()), "SQLSTATE 23505, got " + e.getSQLState());
            }
            try (PreparedStatement q = c.prepareStatement("SELECT owner FROM jdbc_acct WHERE id = ?")) {
                q.setLong(1, 7L);
                try (ResultSet rs = q.executeQuery()) {
                    check(rs.next() && rs.getString(1).equals("owner7"), "long parameter");
                }
            }
        }
        System.out.println("jdbc ok");
    }
}
