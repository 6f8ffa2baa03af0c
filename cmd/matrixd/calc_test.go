package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// seededDB is a database holding the bundled example runs.
func seededDB(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	db := filepath.Join(dir, "c.db")
	if err := run(context.Background(), append([]string{"import", "--db", db}, seedPages(t, dir)...), env(nil), nil, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	return db
}

// calc runs matrixd calc with args on db, returning what it printed.
func calc(t *testing.T, db string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := run(context.Background(), append(append([]string{"calc"}, args[0], "--db", db), args[1:]...), env(nil), nil, &out, io.Discard)
	return out.String(), err
}

// TestCalcGridAxesAreTheAPIs: calc grid refuses the axes the API refuses,
// saying what was asked: more values than a grid has, or a value out of
// the parameter's range.
func TestCalcGridAxesAreTheAPIs(t *testing.T) {
	db := seededDB(t)
	var many []string
	for i := range 18 {
		many = append(many, label(1024*i))
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--contexts", strings.Join(many, ","), "--concurrencies", "1"}, "--contexts takes at most 16 values, not 18"},
		{[]string{"--concurrencies", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17"}, "--concurrencies takes at most 16 values, not 17"},
		{[]string{"--concurrencies", "0,1"}, "--concurrencies takes 1 to 65536, not 0"},
		{[]string{"--contexts", "0,17000000"}, "--contexts takes 0 to 16777216, not 17000000"},
	} {
		_, err := calc(t, db, append([]string{"grid", "--model", "nemotron", "--gpu", "RTX 3090"}, tc.args...)...)
		var usage *usageError
		if !errors.As(err, &usage) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "measured") {
			t.Errorf("calc grid %s: %v, want a usage error saying %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}
