package main

import (
	"context"
	"fmt"
	"io"

	"github.com/matrixd/matrixd/store"
)

// copyCmd copies every run and API key from one store to another.
func copyCmd(ctx context.Context, args []string, stdout io.Writer) error {
	c := newCLI("copy", "--from DB --to DB",
		"Copy every run and API key from one database to another (SQLite to PostgreSQL or back),\nkeeping run ids, creation times, submitters and keys. What the destination holds already\nis skipped, so a copy can be repeated or resumed. Each DB is a file path or a postgres:// URL.")
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
	fmt.Fprintf(stdout, "copied %d runs (%d already there) and %d keys (%d already there) from %s to %s\n",
		res.Runs, res.RunsSkipped, res.Keys, res.KeysSkipped, store.Redact(*from), store.Redact(*to))
	return nil
}
