package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestStaleSeriesKeysReadTheIndex: the queries run at every start, for
// series keys to fill and runs to check, read an index, not every run.
func TestStaleSeriesKeysReadTheIndex(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(t.TempDir(), "plan.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	q, args := staleSeriesKeys()
	if got := queryPlan(t, st, q, args...); strings.Contains(got, "SCAN runs") || !strings.Contains(got, "runs_by_series") {
		t.Errorf("plan %q, want searches of runs_by_series and no scan of runs", got)
	}
	// So does the query for runs to check again by newer rules.
	if got := queryPlan(t, st, runsToCheck, 3, 3, 200); strings.Contains(got, "SCAN runs") || !strings.Contains(got, "runs_by_trust_version") {
		t.Errorf("plan %q, want searches of runs_by_trust_version and no scan of runs", got)
	}
}

// queryPlan is SQLite's plan for q, its steps joined.
func queryPlan(t *testing.T, st *Store, q string, args ...any) string {
	t.Helper()
	rows, err := st.reader.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	return strings.Join(plan, "; ")
}
