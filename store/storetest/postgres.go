package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver

	"github.com/matrixd/matrixd/store"
)

// PostgresSchema makes a fresh schema on the PostgreSQL server dsn names,
// dropped when the test ends, and returns a dsn whose connections use it.
// A server that cannot be reached fails the test: a test that asked for
// PostgreSQL must not pass without it.
func PostgresSchema(t testing.TB, dsn string) string {
	t.Helper()
	ctx := context.Background()
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatalf("PostgreSQL at %s: %v", redacted(dsn), err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "mxd_test_" + hex.EncodeToString(b)
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		admin.Close()
		t.Fatalf("PostgreSQL at %s: %v", redacted(dsn), err)
	}
	t.Cleanup(func() {
		_, _ = admin.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		admin.Close()
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Postgres opens a store in a fresh schema of the PostgreSQL server dsn
// names, closed and dropped when the test ends.
func Postgres(t testing.TB, dsn string, opts store.Options) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), PostgresSchema(t, dsn), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func redacted(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
