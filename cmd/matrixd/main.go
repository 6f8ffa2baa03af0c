// Command matrixd serves the public API of LLM inference matrix runs and
// imports published runs into its SQLite database.
//
//	matrixd [serve] [--addr :8080] [--db ./matrixd.db] [--no-seed]
//	matrixd import [--db PATH] FILE...   (- for stdin)
//	matrixd import --format FORMAT --meta META.json FILE...
//	matrixd keys create|list|revoke
//	matrixd export [--db PATH] RUN_ID
//	matrixd generate [--db PATH] [--runs N] [--seed S]
//	matrixd calc decode|capacity|grid|prefill [flags]
//	matrixd eval [--db PATH] [--json]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/matrixd/matrixd/server"
	"github.com/matrixd/matrixd/store"
)

func main() {
	err := run(context.Background(), os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return // the flag package has printed the usage
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "matrixd: %v\n", err)
		os.Exit(1)
	}
}

const usage = `usage:
  matrixd [serve] [flags]           run the API server
  matrixd import [--db PATH] FILE…  store runs from published pages or run JSON (- reads stdin)
  matrixd import --format FORMAT --meta META.json FILE…  one run from a benchmark tool's output
  matrixd keys create|list|revoke   API keys for submissions over HTTP
  matrixd export [--db PATH] RUN_ID print a run as importable JSON
  matrixd generate [--db PATH] [--runs N] [--seed S]  add N synthetic runs (for load tests)
  matrixd calc decode|capacity|grid|prefill [flags]   the decode calculator (-h for flags)
  matrixd eval [--db PATH] [--json]  the calculator's held-out accuracy over every stored run
Run "matrixd COMMAND -h" for a command's flags.`

// run is main without the process: testable, with its environment passed in.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return serve(ctx, args, getenv, stdout, stderr)
	case "import":
		return importCmd(ctx, args, getenv, stdin, stdout, stderr)
	case "export":
		return exportCmd(ctx, args, getenv, stdout, stderr)
	case "generate":
		return generateCmd(ctx, args, getenv, stdout, stderr)
	case "calc":
		return calcCmd(ctx, args, getenv, stdout, stderr)
	case "eval":
		return evalCmd(ctx, args, getenv, stdout, stderr)
	case "keys":
		return keysCmd(ctx, args, getenv, stdout, stderr)
	case "help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	return fmt.Errorf("unknown command %q\n%s", cmd, usage)
}

// envOr returns the environment's value for key, or def.
func envOr(getenv func(string) string, key, def string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return def
}

func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

func dbFlag(fs *flag.FlagSet, getenv func(string) string) *string {
	return fs.String("db", envOr(getenv, "MATRIXD_DB", "./matrixd.db"), "SQLite database file (env MATRIXD_DB)")
}

func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", stderr)
	addr := fs.String("addr", envOr(getenv, "MATRIXD_ADDR", ":8080"), "listen address (env MATRIXD_ADDR)")
	db := dbFlag(fs, getenv)
	noSeedDefault := false
	if v := getenv("MATRIXD_NO_SEED"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("MATRIXD_NO_SEED=%q: want true or false", v)
		}
		noSeedDefault = b
	}
	noSeed := fs.Bool("no-seed", noSeedDefault, "do not load the bundled example runs into an empty database (env MATRIXD_NO_SEED)")
	logLevel := fs.String("log-level", envOr(getenv, "MATRIXD_LOG_LEVEL", "info"), "debug, info, warn or error (env MATRIXD_LOG_LEVEL)")
	sync := fs.String("synchronous", envOr(getenv, "MATRIXD_SYNCHRONOUS", "NORMAL"), "SQLite synchronous: NORMAL or FULL (env MATRIXD_SYNCHRONOUS)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("serve takes no arguments, got %q", fs.Args())
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	st, err := store.Open(ctx, *db, store.Options{Synchronous: *sync})
	if err != nil {
		return err
	}
	defer st.Close()
	if !*noSeed {
		n, err := seedIfEmpty(ctx, st)
		if err != nil {
			return err
		}
		if n > 0 {
			logger.Info("seeded empty database with the bundled example runs", slog.Int("runs", n), slog.String("db", *db))
		}
	}
	h, err := server.New(st, server.Config{Logger: logger})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := server.NewHTTPServer(*addr, h)
	fmt.Fprintf(stdout, "matrixd listening on http://%s\n", ln.Addr())
	logger.Info("listening", slog.String("addr", ln.Addr().String()), slog.String("db", *db))

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	shutCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
