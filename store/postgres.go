package store

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"database/sql"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
)

//go:embed migrations_postgres/*.sql
var postgresMigrations embed.FS

// postgresMigrationLock is the advisory lock key that makes instances
// starting at once migrate one after another (any constant; "mxd" in ASCII).
const postgresMigrationLock = 0x6d7864

// openPostgres opens a PostgreSQL database: one pool serves reads and
// writes (the server keeps each transaction consistent), sized by the
// URL's pool_max_conns (default 10).
func openPostgres(ctx context.Context, dsn string, opts Options) (*Store, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.VersionClock == nil {
		opts.VersionClock = time.Now
	}
	if opts.Synchronous != "" && !strings.EqualFold(opts.Synchronous, "NORMAL") {
		return nil, fmt.Errorf("open store: --synchronous is SQLite's; PostgreSQL's durability is the server's (synchronous_commit)")
	}
	maxConns := 10
	if u, err := url.Parse(dsn); err == nil {
		q := u.Query()
		if v := q.Get("pool_max_conns"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 1000 {
				return nil, fmt.Errorf("open store: pool_max_conns %q is not 1…1000", v)
			}
			maxConns = n
			q.Del("pool_max_conns")
			u.RawQuery = q.Encode()
			dsn = u.String()
		}
	}
	pool, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	pool.SetMaxOpenConns(maxConns)
	pool.SetMaxIdleConns(maxConns)
	pool.SetConnMaxIdleTime(5 * time.Minute)
	s := &Store{writer: db{pool, postgresSQL}, reader: db{pool, postgresSQL}, dialect: postgresSQL, now: opts.Now, versionClock: opts.VersionClock}
	if err := s.checkSchema(ctx, opts.Existing); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open store %s: %w", Redact(dsn), err)
	}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open store %s: %w", Redact(dsn), err)
	}
	if s.cursorKey, err = s.secret(ctx, "cursor"); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open store %s: %w", Redact(dsn), err)
	}
	return s, nil
}

// Redact names a database for logs and messages: a file path as it is, a
// URL without its password.
func Redact(dsn string) string {
	if !IsPostgres(dsn) && !strings.Contains(dsn, "://") && !strings.Contains(dsn, "password=") {
		return dsn
	}
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" {
		return "the database URL given"
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// checkSchema makes sure the URL's schema exists, and with existing that
// matrixd has set it up.
func (s *Store) checkSchema(ctx context.Context, existing bool) error {
	var schema sql.NullString
	if err := s.reader.QueryRowContext(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		return err
	}
	if !schema.Valid {
		return errors.New("the schema the URL's search_path names does not exist: create it first (CREATE SCHEMA name), or leave search_path out to use public")
	}
	if !existing {
		return nil
	}
	var table sql.NullString
	if err := s.reader.QueryRowContext(ctx, "SELECT to_regclass('schema_migrations')::text").Scan(&table); err != nil {
		return err
	}
	if !table.Valid {
		return fmt.Errorf("no matrixd database in schema %s: start the service on it once (it creates and seeds one), copy runs into it, or check the URL's search_path", schema.String)
	}
	return nil
}

// migratePostgres applies the PostgreSQL migrations the database lacks,
// holding an advisory lock so that instances starting at once migrate
// exactly once, one after the other.
func (s *Store) migratePostgres(ctx context.Context) error {
	conn, err := s.writer.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", postgresMigrationLock); err != nil {
		return fmt.Errorf("migration lock: %w", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", postgresMigrationLock) //nolint:errcheck // released with the session anyway
	if _, err := conn.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, applied_at text NOT NULL)"); err != nil {
		return fmt.Errorf("migrations table: %w", err)
	}
	var version int
	if err := conn.QueryRowContext(ctx, "SELECT coalesce(max(version), 0) FROM schema_migrations").Scan(&version); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	names, err := fs.Glob(postgresMigrations, "migrations_postgres/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	if version > len(names) {
		return fmt.Errorf("database schema version %d is newer than this binary's %d: upgrade matrixd", version, len(names))
	}
	for i := version; i < len(names); i++ {
		body, err := postgresMigrations.ReadFile(names[i])
		if err != nil {
			return err
		}
		t, err := conn.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		_, err = t.ExecContext(ctx, string(body))
		if err == nil {
			err = migrateData(ctx, &tx{Tx: t, d: postgresSQL}, names[i])
		}
		if err == nil {
			_, err = t.ExecContext(ctx, "INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)", i+1, formatTime(time.Now()))
		}
		if err == nil {
			err = t.Commit()
		} else {
			err = errors.Join(err, t.Rollback())
		}
		if err != nil {
			return fmt.Errorf("migration %s: %w", names[i], err)
		}
	}
	return nil
}

// isRetryable reports a PostgreSQL transaction aborted for another's sake
// (serialization failure, deadlock): the same transaction may succeed now.
func isRetryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// isUniqueViolation reports a PostgreSQL unique or primary-key violation.
func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}
