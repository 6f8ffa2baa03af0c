package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/matrixd/matrixd/store"
)

const keysUsage = `usage:
  matrixd keys create --name NAME [--admin] [--db PATH]  make a key; it is printed once, on the last line
  matrixd keys list [--db PATH]                          name, admin, created, last used, revoked
  matrixd keys revoke [--db PATH] NAME                   the key stops working; its runs stay`

func keysCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("keys: name a subcommand\n%s", keysUsage)
	}
	sub, args := args[0], args[1:]
	fs := newFlags("keys "+sub, stderr)
	db := dbFlag(fs, getenv)
	var name *string
	var admin *bool
	switch sub {
	case "create":
		name = fs.String("name", "", "the key's name, recorded as submitted_by on its runs: 1–64 letters, digits, '.', '_', '-' or '@'")
		admin = fs.Bool("admin", false, "an admin key may edit and delete any run")
	case "list", "revoke":
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, keysUsage)
		return nil
	default:
		return fmt.Errorf("keys: unknown subcommand %q\n%s", sub, keysUsage)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	wantArgs := 0
	if sub == "revoke" {
		wantArgs = 1
	}
	if sub == "revoke" && fs.NArg() == 0 {
		return fmt.Errorf("keys revoke: name the key to revoke\n%s", keysUsage)
	}
	if fs.NArg() != wantArgs {
		return fmt.Errorf("keys %s: unexpected arguments %q\n%s", sub, fs.Args(), keysUsage)
	}
	st, err := store.Open(ctx, *db, store.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	switch sub {
	case "create":
		if *name == "" {
			return fmt.Errorf("keys create: --name is required")
		}
		k, token, err := st.CreateKey(ctx, *name, *admin)
		if err != nil {
			return fmt.Errorf("keys create: %w", err)
		}
		kind := "key"
		if k.Admin {
			kind = "admin key"
		}
		fmt.Fprintf(stdout, "created %s %s; it is shown only now: send it as Authorization: Bearer KEY\n%s\n", kind, k.Name, token)
	case "list":
		keys, err := st.Keys(ctx)
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "NAME\tADMIN\tCREATED\tLAST USED\tREVOKED")
		for _, k := range keys {
			fmt.Fprintf(w, "%s\t%t\t%s\t%s\t%s\n", k.Name, k.Admin, k.CreatedAt.Format(time.RFC3339), when(k.LastUsedAt), when(k.RevokedAt))
		}
		return w.Flush()
	case "revoke":
		revoked, err := st.RevokeKey(ctx, fs.Arg(0))
		if err != nil {
			return fmt.Errorf("keys revoke: %w", err)
		}
		if revoked {
			fmt.Fprintf(stdout, "revoked key %s\n", fs.Arg(0))
		} else {
			fmt.Fprintf(stdout, "key %s was revoked already\n", fs.Arg(0))
		}
	}
	return nil
}

func when(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format(time.RFC3339)
}
