// Command matrixd serves the public API of LLM inference matrix runs and
// imports published runs into its SQLite database.
//
//	matrixd [serve] [--addr :8080] [--db ./matrixd.db] [--no-seed]
//	matrixd import [--db PATH] FILE...   (- for stdin)
//	matrixd import --format FORMAT --meta META.json FILE...
//	matrixd import --dir DIR            (a folder, as a fresh database is seeded)
//	matrixd keys create|list|revoke
//	matrixd healthcheck [--addr :8080]
//	matrixd export [--db PATH] RUN_ID
//	matrixd generate [--db PATH] [--runs N] [--seed S]
//	matrixd calc decode|capacity|grid|prefill|plan [flags]
//	matrixd eval [--db PATH] [--json]
//	matrixd mcp [--db PATH]              (MCP tools over stdio)
//	matrixd help [COMMAND]
//
// "matrixd COMMAND --help" prints a command's arguments and flags. A
// command line that cannot be run as written exits 2, any other failure 1.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/matrixd/matrixd/predict"
	"github.com/matrixd/matrixd/server"
	"github.com/matrixd/matrixd/store"
)

func main() {
	err := run(context.Background(), os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "matrixd: %v\n", err)
		os.Exit(exitCode(err))
	}
}

// run is main without the process: testable, with its environment passed in.
// A request for help is answered on stdout and returns nil.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	err := dispatch(ctx, args, getenv, stdin, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

func dispatch(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	// With no command, or only flags, matrixd serves: the set-up command
	// is a bare "matrixd".
	cmd := "serve"
	switch {
	case len(args) > 0 && isHelp(args[0]):
		cmd, args = "help", args[1:]
	case len(args) > 0 && !strings.HasPrefix(args[0], "-"):
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return serve(ctx, args, getenv, stdout, stderr)
	case "import":
		return importCmd(ctx, args, getenv, stdin, stdout, stderr)
	case "export":
		return exportCmd(ctx, args, getenv, stdout)
	case "generate":
		return generateCmd(ctx, args, getenv, stdout)
	case "calc":
		return calcCmd(ctx, args, getenv, stdout)
	case "eval":
		return evalCmd(ctx, args, getenv, stdout)
	case "fit":
		return fitCmd(ctx, args, getenv, stdout)
	case "copy":
		return copyCmd(ctx, args, stdout)
	case "keys":
		return keysCmd(ctx, args, getenv, stdout)
	case "healthcheck":
		return healthcheck(ctx, args, getenv, stdout)
	case "mcp":
		return mcpCmd(ctx, args, getenv, stdin, stdout, stderr)
	case "help":
		if len(args) == 0 || isHelp(args[0]) || args[0] == "help" {
			fmt.Fprintln(stdout, usage)
			return nil
		}
		// matrixd help calc prefill = matrixd calc prefill --help
		return dispatch(ctx, append(append([]string(nil), args...), "--help"), getenv, stdin, stdout, stderr)
	}
	return &usageError{"", fmt.Errorf("unknown command %q", cmd)}
}

func rateLimits(reads, writes, cost string, costBurst time.Duration) (server.RateLimit, error) {
	r, err := strconv.ParseFloat(reads, 64)
	if err != nil || r < 0 {
		return server.RateLimit{}, fmt.Errorf("--rate-limit %q: want requests per second, 0 or more", reads)
	}
	w, err := strconv.ParseFloat(writes, 64)
	if err != nil || w < 0 {
		return server.RateLimit{}, fmt.Errorf("--write-rate-limit %q: want writes per second, 0 or more", writes)
	}
	c, err := strconv.ParseFloat(cost, 64)
	if err != nil || c < 0 || math.IsInf(c, 0) {
		return server.RateLimit{}, fmt.Errorf("--cost-limit %q: want seconds of server time per second, 0 or more", cost)
	}
	if costBurst < 0 {
		return server.RateLimit{}, fmt.Errorf("--cost-burst %s: want a duration of 0 or more", costBurst)
	}
	return server.RateLimit{ReadsPerSecond: r, WritesPerSecond: w, CostPerSecond: c, CostBurst: costBurst}, nil
}

// checkOrigin holds an allowed origin to the form browsers send:
// scheme://host[:port], nothing after it; or "*".
func checkOrigin(o string) error {
	if o == "*" {
		return nil
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
		return fmt.Errorf("%q is not an origin: write it as a browser sends it, scheme://host[:port] with no path, e.g. https://bench.example", o)
	}
	return nil
}

// list splits a comma-separated flag value.
func list(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

func cidrs(s string) ([]*net.IPNet, error) {
	var out []*net.IPNet
	for _, c := range list(s) {
		if !strings.Contains(c, "/") {
			if strings.Contains(c, ":") {
				c += "/128"
			} else {
				c += "/32"
			}
		}
		_, n, err := net.ParseCIDR(c)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// healthcheck asks the server on this machine for /healthz: what a
// container's HEALTHCHECK runs, as the image has no shell or curl.
func healthcheck(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	c := newCLI("healthcheck", "[--addr ADDR]",
		"Ask the server on this machine for /healthz and exit 0 when it answers 200: what\na container's HEALTHCHECK runs, as the image has no shell or curl.")
	fs := c.fs
	addr := fs.String("addr", envOr(getenv, "MATRIXD_ADDR", ":8080"), "the server's listen address (env MATRIXD_ADDR)")
	if err := c.parse(args, stdout); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return c.usageErr("takes no arguments, got %q", fs.Args())
	}
	host, port, err := net.SplitHostPort(*addr)
	if err != nil {
		return c.usageErr("--addr %q: %w", *addr, err)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, port)+"/healthz", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: /healthz answered %d", resp.StatusCode)
	}
	return nil
}

// envOr returns the environment's value for key, or def.
func envOr(getenv func(string) string, key, def string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return def
}

// openExisting opens a database that commands only read (calc, eval,
// export): a missing file is an error naming it, not a new empty database
// that answers "no such run".
func openExisting(ctx context.Context, path string) (*store.Store, error) {
	if _, err := os.Stat(path); !store.IsPostgres(path) && !strings.Contains(path, "://") && errors.Is(err, iofs.ErrNotExist) {
		return nil, fmt.Errorf("no database at %s: start the service once (it creates and seeds one), import runs into it, or point --db (MATRIXD_DB) at the one the service uses", store.Redact(path))
	}
	return store.Open(ctx, path, store.Options{Existing: true})
}

// dbFlag is --db; its help says whether the command creates a missing
// SQLite file or needs an existing one (openExisting).
func dbFlag(fs *flag.FlagSet, getenv func(string) string, creates bool) *string {
	file := "an existing SQLite file"
	if creates {
		file = "an SQLite file (created if missing)"
	}
	return fs.String("db", envOr(getenv, "MATRIXD_DB", "./matrixd.db"), "the database: "+file+" or a postgres:// URL (env MATRIXD_DB)")
}

func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	c := newCLI("serve", "[flags]",
		"Run the API server: the database is created, migrated and seeded with the bundled\nexample runs on first start, and with the open dataset once it answers. \"matrixd\" with\nno command, or with only flags, serves.")
	fs := c.fs
	addr := fs.String("addr", envOr(getenv, "MATRIXD_ADDR", ":8080"), "listen address (env MATRIXD_ADDR)")
	db := dbFlag(fs, getenv, true)
	// A bad MATRIXD_NO_SEED is reported after parsing, so that --help
	// still answers.
	noSeedDefault, noSeedErr := false, error(nil)
	if v := getenv("MATRIXD_NO_SEED"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			noSeedErr = fmt.Errorf("MATRIXD_NO_SEED=%q: want true or false", v)
		}
		noSeedDefault = b
	}
	noSeed := fs.Bool("no-seed", noSeedDefault, "do not load the bundled example runs and the open dataset into an empty database (env MATRIXD_NO_SEED)")
	logLevel := fs.String("log-level", envOr(getenv, "MATRIXD_LOG_LEVEL", "info"), "debug, info, warn or error (env MATRIXD_LOG_LEVEL)")
	sync := fs.String("synchronous", envOr(getenv, "MATRIXD_SYNCHRONOUS", "NORMAL"), "SQLite synchronous: NORMAL or FULL (env MATRIXD_SYNCHRONOUS)")
	readRate := fs.String("rate-limit", envOr(getenv, "MATRIXD_RATE_LIMIT", "100"), "requests per second per client address, bursts of twice that; 0 turns it off (env MATRIXD_RATE_LIMIT)")
	writeRate := fs.String("write-rate-limit", envOr(getenv, "MATRIXD_WRITE_RATE_LIMIT", "5"), "writes per second per API key, bursts of twice that; 0 turns it off (env MATRIXD_WRITE_RATE_LIMIT)")
	costRate := fs.String("cost-limit", envOr(getenv, "MATRIXD_COST_LIMIT", "0.25"), "seconds of server time per second that one client address, or API key, may take with requests the cache does not answer, each charged a fixed cost for what it asks; 0 turns it off (env MATRIXD_COST_LIMIT)")
	costBurst := fs.Duration("cost-burst", 5*time.Second, "server time a client may take at once before --cost-limit applies")
	origins := fs.String("cors-write-origins", getenv("MATRIXD_CORS_WRITE_ORIGINS"), "comma-separated browser origins allowed to write, e.g. https://bench.example; reads are open to all (env MATRIXD_CORS_WRITE_ORIGINS)")
	proxies := fs.String("trusted-proxies", getenv("MATRIXD_TRUSTED_PROXIES"), "comma-separated CIDRs of proxies whose X-Forwarded-For names the client (env MATRIXD_TRUSTED_PROXIES)")
	public := fs.String("public-url", getenv("MATRIXD_PUBLIC_URL"), "where clients reach this server, e.g. https://matrixd.example.org: feeds' links are absolute under it, else relative (env MATRIXD_PUBLIC_URL)")
	cacheMB := fs.Int("cache-mb", 64, "memory for prepared GET answers, in MiB; 0 keeps none")
	fitCacheMB := fs.String("fit-cache-mb", envOr(getenv, "MATRIXD_FIT_CACHE_MB", strconv.Itoa(predict.DefaultCacheBytes>>20)),
		"memory for the calculator's fitted runs, in MiB, the least recently used refitted when asked again; 0 keeps none (env MATRIXD_FIT_CACHE_MB)")
	if err := c.parse(args, stdout); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return c.usageErr("takes no arguments, got %q", fs.Args())
	}
	if noSeedErr != nil {
		return c.usageErr("%w", noSeedErr)
	}
	limits, err := rateLimits(*readRate, *writeRate, *costRate, *costBurst)
	if err != nil {
		return c.usageErr("%w", err)
	}
	writeOrigins := list(*origins)
	for _, o := range writeOrigins {
		if err := checkOrigin(o); err != nil {
			return c.usageErr("--cors-write-origins: %w", err)
		}
	}
	trusted, err := cidrs(*proxies)
	if err != nil {
		return c.usageErr("--trusted-proxies: %w", err)
	}
	fitMB, err := strconv.Atoi(*fitCacheMB)
	if err != nil || fitMB < 0 || fitMB > 1<<20 {
		return c.usageErr("--fit-cache-mb %q: want MiB, from 0 (keep no fit) to %d", *fitCacheMB, 1<<20)
	}
	fitBytes := int64(fitMB) << 20
	if fitMB == 0 {
		fitBytes = -1
	}
	cacheBytes := int64(*cacheMB) << 20
	if *cacheMB == 0 {
		cacheBytes = -1
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return c.usageErr("--log-level: %w", err)
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	// Bind first: a port that cannot be had leaves no database behind.
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	st, err := store.Open(ctx, *db, store.Options{Synchronous: *sync})
	if err != nil {
		return err
	}
	defer st.Close()
	fresh := false
	if !*noSeed {
		n, err := seedIfEmpty(ctx, st)
		if err != nil {
			return err
		}
		if fresh = n > 0; fresh {
			logger.Info("seeded empty database with the bundled example runs", slog.Int("runs", n), slog.String("db", store.Redact(*db)))
		}
	}
	// The calculator is closed before the store: its fits being made
	// end first, and none writes to a closed database.
	calc := predict.New(st, fitBytes, nil)
	defer calc.Close()
	rechecked, err := recheck(ctx, st)
	if err != nil {
		return err
	}
	h, err := server.New(st, server.Config{Logger: logger, RateLimit: limits, WriteOrigins: writeOrigins,
		TrustedProxies: trusted, CacheBytes: cacheBytes, Calc: calc, PublicURL: *public})
	if err != nil {
		return err
	}
	// The stored runs' missing fits are made, and the runs checked again
	// are judged again against the rest, in the background until done or
	// shutdown.
	fitted, judged := make(chan struct{}), make(chan struct{})
	go func() { defer close(fitted); backfill(ctx, calc, logger) }()
	go func() { defer close(judged); recorroborate(ctx, st, rechecked, logger) }()
	defer func() { stop(); <-fitted; <-judged }() // before the calculator and the store close
	srv := server.NewHTTPServer(*addr, h)
	fmt.Fprintf(stdout, "matrixd listening on http://%s\n", ln.Addr())
	logger.Info("listening", slog.String("addr", ln.Addr().String()), slog.String("db", store.Redact(*db)))

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	// A fresh database gets the open dataset after the server answers:
	// the few seconds it takes do not delay the first answer, and the
	// runs' fits follow one at a time, as at start-up.
	seeded := make(chan struct{})
	go func() {
		defer close(seeded)
		if !fresh {
			return
		}
		start := time.Now()
		n, err := seedDataset(ctx, st)
		attrs := []slog.Attr{slog.Int("runs", n), slog.Float64("seconds", time.Since(start).Seconds())}
		if err != nil {
			if ctx.Err() != nil {
				logger.LogAttrs(context.Background(), slog.LevelInfo, "seeding the open dataset stopped at shutdown", attrs...)
				return
			}
			logger.LogAttrs(context.Background(), slog.LevelError, "seeding the open dataset", append(attrs, slog.String("error", err.Error()))...)
			return
		}
		logger.LogAttrs(context.Background(), slog.LevelInfo, "seeded the open dataset", attrs...)
		backfill(ctx, calc, logger)
	}()
	defer func() { stop(); <-seeded }() // before the calculator and the store close
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
