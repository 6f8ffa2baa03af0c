package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/matrixd/matrixd/store"
)

// copyCmd copies everything one store holds into another and checks the
// counts of every table afterwards.
func copyCmd(ctx context.Context, args []string, stdout io.Writer) error {
	c := newCLI("copy", "--from DB --to DB",
		`Copy everything one database stores into another (SQLite to PostgreSQL or back): API keys,
signing keys, source bytes, runs with their cells and fits, flags, the history of every run,
idempotency records and the seeded mark, keeping ids, times and references. What the
destination holds already is skipped, so a copy can be repeated or resumed. Each DB is a file
path or a postgres:// URL.

It prints each table's rows copied and skipped, then compares each table's row count in the
two databases. It exits 1 naming every table whose counts do not add up: a table the
destination held nothing of must end with as many rows as the source; one it held rows of
must have grown by what was copied, every source row copied or skipped.`)
	fs := c.fs
	from := fs.String("from", "", "the database to copy from (required)")
	to := fs.String("to", "", "the database to copy into, created or migrated if needed (required)")
	if err := c.parse(args, stdout); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return c.usageErr("takes no arguments, got %q", fs.Args())
	}
	if *from == "" || *to == "" {
		return c.usageErr("--from and --to are required")
	}
	if *from == *to {
		return c.usageErr("--from and --to name the same database")
	}
	src, err := openExisting(ctx, *from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := store.Open(ctx, *to, store.Options{})
	if err != nil {
		return err
	}
	defer dst.Close()
	res, err := src.CopyTo(ctx, dst)
	if err != nil {
		return err
	}
	parts := make([]string, len(res.Tables))
	for i, t := range res.Tables {
		parts[i] = t.String()
	}
	fmt.Fprintf(stdout, "copied from %s to %s: %s\n", store.Redact(*from), store.Redact(*to), strings.Join(parts, ", "))
	if bad := res.Incomplete(); len(bad) > 0 {
		names := make([]string, len(bad))
		for i, t := range bad {
			names[i] = t.Name
		}
		return fmt.Errorf("copy incomplete: the row counts of %s do not add up (above); was the source written during the copy? copy again, with no server writing to it", strings.Join(names, ", "))
	}
	return nil
}
