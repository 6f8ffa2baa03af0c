package store

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
)

// dialect is the SQL the store speaks: SQLite (the embedded default) or
// PostgreSQL (several instances on one database). Queries are written
// once, with ? placeholders and the few differing fragments asked of the
// dialect; nothing above the store sees which one it is.
type dialect int

const (
	sqliteSQL dialect = iota
	postgresSQL
)

// rebind turns ? placeholders into PostgreSQL's $1, $2 …; queries hold no
// ? inside string literals.
func (d dialect) rebind(q string) string {
	if d != postgresSQL || !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// eqNoCase compares a column with a placeholder ignoring ASCII case; the
// indexes are built to match (COLLATE NOCASE, lower(col)).
func (d dialect) eqNoCase(col string) string {
	if d == postgresSQL {
		return "lower(" + col + ") = lower(?)"
	}
	return col + " = ? COLLATE NOCASE"
}

// inNoCase is eqNoCase against a list of n placeholders.
func (d dialect) inNoCase(col string, n int) string {
	list := strings.TrimSuffix(strings.Repeat("?,", n), ",")
	if d == postgresSQL {
		return "lower(" + col + ") IN (SELECT lower(v) FROM (VALUES (" + strings.ReplaceAll(list, ",", "),(") + ")) AS names (v))"
	}
	return col + " COLLATE NOCASE IN (" + list + ")"
}

// noCase is a column ordered and compared ignoring case.
func (d dialect) noCase(col string) string {
	if d == postgresSQL {
		return "lower(" + col + ")"
	}
	return col + " COLLATE NOCASE"
}

// contains tests that a contains b, ignoring case.
func (d dialect) contains(a, b string) string {
	if d == postgresSQL {
		return "strpos(lower(" + a + "), lower(" + b + ")) > 0"
	}
	return "instr(lower(" + a + "), lower(" + b + ")) > 0"
}

// unindexed keeps a column's index out of a plan (SQLite's unary +);
// PostgreSQL's planner needs no hint.
func (d dialect) unindexed(col string) string {
	if d == postgresSQL {
		return col
	}
	return "+" + col
}

// sameAs compares a column with a placeholder, NULL equal to NULL.
func (d dialect) sameAs(col string) string {
	if d == postgresSQL {
		return col + " IS NOT DISTINCT FROM ?"
	}
	return col + " IS ?"
}

// insertIgnore starts an INSERT that skips rows already there.
func (d dialect) insertIgnore(table string) (prefix, suffix string) {
	if d == postgresSQL {
		return "INSERT INTO " + table, " ON CONFLICT DO NOTHING"
	}
	return "INSERT OR IGNORE INTO " + table, ""
}

// forUpdate ends a SELECT that locks the rows it reads until the
// transaction ends. SQLite needs none: its writer transactions begin
// immediate, so they run one at a time already.
func (d dialect) forUpdate() string {
	if d == postgresSQL {
		return " FOR UPDATE"
	}
	return ""
}

// boolInt and nullBoolInt store booleans as 0 and 1, as both schemas do.
func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func nullBoolInt(b *bool) *int {
	if b == nil {
		return nil
	}
	v := boolInt(*b)
	return &v
}

// isUnique reports a unique or primary-key violation in either database.
func isUnique(err error) bool {
	return isConstraint(err, sqliteConstraintUnique) || isConstraint(err, sqliteConstraintPrimaryKey) || isUniqueViolation(err)
}

// db is a pool that speaks the store's dialect.
type db struct {
	*sql.DB
	d dialect
}

func (c db) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return c.DB.ExecContext(ctx, c.d.rebind(q), args...)
}

func (c db) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return c.DB.QueryContext(ctx, c.d.rebind(q), args...)
}

func (c db) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return c.DB.QueryRowContext(ctx, c.d.rebind(q), args...)
}

func (c db) begin(ctx context.Context, opts *sql.TxOptions) (*tx, error) {
	if c.d == postgresSQL && opts != nil && opts.ReadOnly && opts.Isolation == sql.LevelDefault {
		// One snapshot for every statement of a read (a run and its cells),
		// as SQLite's readers have: under READ COMMITTED a run deleted
		// between two statements would be half read. A read-only
		// transaction never fails to serialize.
		o := *opts
		o.Isolation = sql.LevelRepeatableRead
		opts = &o
	}
	t, err := c.DB.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &tx{Tx: t, d: c.d}, nil
}

// tx is a transaction that speaks the store's dialect.
type tx struct {
	*sql.Tx
	d dialect
}

func (t *tx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return t.Tx.ExecContext(ctx, t.d.rebind(q), args...)
}

func (t *tx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return t.Tx.QueryContext(ctx, t.d.rebind(q), args...)
}

func (t *tx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return t.Tx.QueryRowContext(ctx, t.d.rebind(q), args...)
}

func (t *tx) PrepareContext(ctx context.Context, q string) (*sql.Stmt, error) {
	return t.Tx.PrepareContext(ctx, t.d.rebind(q))
}
