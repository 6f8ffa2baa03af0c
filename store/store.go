package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Store is the SQLite database of matrix runs. Writes go through a
// one-connection pool, reads through a pool of read-only connections, so
// readers never wait for the writer (WAL).
type Store struct {
	writer  db
	reader  db
	dialect dialect
	now     func() time.Time
	// versionClock ages the last read of the versions (VersionMaxAge).
	versionClock func() time.Time
	cursorKey    []byte // signs pagination cursors

	// writes counts this process's committed write transactions; checked is
	// the last data version read and the writes count it was read at.
	writes  atomic.Int64
	checked atomic.Pointer[versionCheck]
}

type versionCheck struct {
	v      Versions
	writes int64
	at     time.Time
}

// VersionMaxAge is how long Versions trusts its last read when this
// process has not written since: other processes' writes show within it.
const VersionMaxAge = 250 * time.Millisecond

// Versions are counters that the database bumps in the transaction of
// each change: Data with every change to the stored runs, their flags or
// the signing keys; Measured only with a change that can move a
// measurement (a run stored, deleted, hidden or restored; any change of a
// run other than of its title, notes or source). Both only grow.
type Versions struct {
	Data, Measured int64
}

// Options tune Open. The zero value is fine.
type Options struct {
	// Now stamps created_at; time.Now when nil.
	Now func() time.Time
	// Synchronous is SQLite's synchronous pragma: NORMAL (the default)
	// survives a crash of the process, FULL also a power loss.
	Synchronous string
	// VersionClock tells Versions when its last read has aged past
	// VersionMaxAge; time.Now when nil.
	VersionClock func() time.Time
	// Existing refuses a PostgreSQL database that matrixd has not set up
	// (commands that only read must not create tables where a URL points
	// by mistake); SQLite callers check the file.
	Existing bool
}

// Open opens the database dsn names and applies the migrations it lacks: a
// file path is an SQLite file (created if needed), a postgres:// or
// postgresql:// URL a PostgreSQL database.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	if err := checkDSN(dsn); err != nil {
		return nil, err
	}
	open := openSQLite
	if IsPostgres(dsn) {
		open = openPostgres
	}
	s, err := open(ctx, dsn, opts)
	if err != nil {
		return nil, err
	}
	if err := s.fillSeriesKeys(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("open store %s: %w", Redact(dsn), err)
	}
	return s, nil
}

// IsPostgres reports whether dsn names a PostgreSQL database.
func IsPostgres(dsn string) bool {
	l := strings.ToLower(dsn)
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")
}

// checkDSN refuses what is neither a file path nor a postgres:// URL, so
// that a mistyped URL never becomes an SQLite file of that name.
func checkDSN(dsn string) error {
	switch {
	case IsPostgres(dsn):
		return nil
	case strings.Contains(dsn, "://"):
		return fmt.Errorf("open store: %s is not a database: give a file path or a postgres:// URL", Redact(dsn))
	case strings.Contains(dsn, "host=") || strings.Contains(dsn, "dbname=") || strings.Contains(dsn, "password="):
		return errors.New("open store: key=value connection strings are not taken: give a postgres:// URL (postgres://user@host:5432/db?sslmode=…)")
	}
	return nil
}

func openSQLite(ctx context.Context, path string, opts Options) (*Store, error) {
	if path == "" || strings.HasPrefix(path, ":memory:") || strings.Contains(path, "mode=memory") {
		return nil, fmt.Errorf("open store: a database file path is required (the two pools must share one file)")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.VersionClock == nil {
		opts.VersionClock = time.Now
	}
	sync := strings.ToUpper(opts.Synchronous)
	if sync == "" {
		sync = "NORMAL"
	}
	if sync != "NORMAL" && sync != "FULL" {
		return nil, fmt.Errorf("open store: synchronous must be NORMAL or FULL, not %q", opts.Synchronous)
	}
	writer, err := sql.Open("sqlite", sqliteDSN(path, false, sync))
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	writer.SetMaxOpenConns(1)
	writer.SetConnMaxIdleTime(0)
	s := &Store{writer: db{writer, sqliteSQL}, dialect: sqliteSQL, now: opts.Now, versionClock: opts.VersionClock}
	if err := s.migrate(ctx); err != nil {
		writer.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if s.cursorKey, err = s.secret(ctx, "cursor"); err != nil {
		writer.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	reader, err := sql.Open("sqlite", sqliteDSN(path, true, sync))
	if err != nil {
		writer.Close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	n := max(4, runtime.NumCPU())
	reader.SetMaxOpenConns(n)
	reader.SetMaxIdleConns(n)
	s.reader = db{reader, sqliteSQL}
	return s, nil
}

func sqliteDSN(path string, readOnly bool, sync string) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)") // first, so the others wait instead of failing
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous("+sync+")")
	q.Add("_pragma", "foreign_keys(ON)")
	if readOnly {
		q.Add("_pragma", "query_only(ON)")
	} else {
		q.Set("_txlock", "immediate") // writers take the lock at BEGIN, never mid-transaction
	}
	return "file:" + path + "?" + q.Encode()
}

// Close closes both pools.
func (s *Store) Close() error {
	if s.reader.DB == s.writer.DB {
		return s.writer.Close()
	}
	return errors.Join(s.reader.Close(), s.writer.Close())
}

// PoolStats reports the reader and writer pools' statistics, for metrics.
func (s *Store) PoolStats() map[string]sql.DBStats {
	return map[string]sql.DBStats{"reader": s.reader.Stats(), "writer": s.writer.Stats()}
}

// Ping checks that the database answers a query.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.reader.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	return nil
}

func (s *Store) migrate(ctx context.Context) error {
	if s.dialect == postgresSQL {
		return s.migratePostgres(ctx)
	}
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	var version int
	if err := s.writer.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if version > len(names) {
		return fmt.Errorf("database schema version %d is newer than this binary's %d: upgrade matrixd", version, len(names))
	}
	for i := version; i < len(names); i++ {
		body, err := migrations.ReadFile(names[i])
		if err != nil {
			return err
		}
		err = s.inTx(ctx, func(tx *tx) error {
			if _, err := tx.ExecContext(ctx, string(body)); err != nil {
				return err
			}
			if err := migrateData(ctx, tx, names[i]); err != nil {
				return err
			}
			// PRAGMA takes no placeholders; i+1 is an integer we control.
			_, err := tx.ExecContext(ctx, "PRAGMA user_version = "+strconv.Itoa(i+1))
			return err
		})
		if err != nil {
			return fmt.Errorf("migration %s: %w", names[i], err)
		}
	}
	return nil
}

// secret returns the named secret, made (32 random bytes) if the database
// has none yet; every process on the database reads the same.
func (s *Store) secret(ctx context.Context, name string) ([]byte, error) {
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return nil, err
	}
	var v []byte
	insert, onConflict := s.dialect.insertIgnore("secrets")
	err := s.inTx(ctx, func(tx *tx) error {
		if _, err := tx.ExecContext(ctx, insert+" (name, value) VALUES (?, ?)"+onConflict, name, fresh); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, "SELECT value FROM secrets WHERE name = ?", name).Scan(&v)
	})
	if err != nil {
		return nil, fmt.Errorf("secret %s: %w", name, err)
	}
	return v, nil
}

// migrateData does, in a migration's transaction, what its SQL cannot;
// the migration is named by its file, so that numbering never shifts the
// work to another migration.
func migrateData(ctx context.Context, tx *tx, file string) error {
	switch path.Base(file) {
	case "0002_submissions.sql":
		return rehashRuns(ctx, tx)
	case "0009_method_trust.sql", "0004_method_trust.sql": // SQLite's, PostgreSQL's
		return classifyRuns(ctx, tx)
	}
	return nil
}

// rehashRuns recomputes content hashes after migration 2 took the editable
// metadata out of them. Ids stay as they are. A run that now hashes like an
// older one keeps its old hash (UPDATE OR IGNORE): both stay readable.
func rehashRuns(ctx context.Context, tx *tx) error {
	rows, err := tx.QueryContext(ctx, "SELECT id FROM runs ORDER BY created_at, id")
	if err != nil {
		return err
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, id := range ids {
		r, err := readRunColumns(ctx, tx, id, true)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE OR IGNORE runs SET content_hash = ? WHERE id = ?", r.ContentHash(), id); err != nil {
			return err
		}
	}
	return nil
}

// inTx runs fn in one write transaction, committed when fn returns nil.
// A transaction the database aborted to keep concurrent ones consistent
// (PostgreSQL's serialization failures and deadlocks) is run again, a few
// times, so fn must set its results afresh on each call.
func (s *Store) inTx(ctx context.Context, fn func(*tx) error) error {
	for attempt := 1; ; attempt++ {
		err := s.tryTx(ctx, fn)
		if attempt < maxTxAttempts && isRetryable(err) && ctx.Err() == nil {
			continue
		}
		if isRetryable(err) || isUnique(err) {
			// Every write decides its conflicts in SQL; one left over is still
			// the client's to retry, never a server error.
			return &Error{Kind: ErrConflict, Msg: "another write changed the same data at the same moment; send the request again", Err: err}
		}
		return err
	}
}

// maxTxAttempts bounds how often inTx runs a transaction.
const maxTxAttempts = 4

func (s *Store) tryTx(ctx context.Context, fn func(*tx) error) error {
	tx, err := s.writer.begin(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return errors.Join(err, tx.Rollback())
	}
	err = tx.Commit()
	s.writes.Add(1) // even on a failed commit: re-reading the version is cheap
	return err
}

// DataVersion is a number that changes whenever the stored runs change
// (Versions.Data).
func (s *Store) DataVersion(ctx context.Context) (int64, error) {
	v, err := s.Versions(ctx)
	return v.Data, err
}

// Versions are the data versions now. A write through this Store shows at
// once; one through another process (the CLI, another instance) within
// VersionMaxAge.
func (s *Store) Versions(ctx context.Context) (Versions, error) {
	writes := s.writes.Load()
	now := s.versionClock()
	if c := s.checked.Load(); c != nil && c.writes == writes && now.Sub(c.at) < VersionMaxAge && !now.Before(c.at) {
		return c.v, nil
	}
	var v Versions
	if err := s.reader.QueryRowContext(ctx, "SELECT version, measured FROM data_version").Scan(&v.Data, &v.Measured); err != nil {
		return Versions{}, fmt.Errorf("data version: %w", err)
	}
	s.checked.Store(&versionCheck{v: v, writes: writes, at: now})
	return v, nil
}

// SQLite's extended constraint codes the store tells apart.
const (
	sqliteConstraintUnique     = sqlite3.SQLITE_CONSTRAINT_UNIQUE
	sqliteConstraintPrimaryKey = sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
)

// isConstraint reports whether err is an SQLite constraint violation with
// the given extended code.
func isConstraint(err error, code int) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == code
}

const timeFormat = "2006-01-02T15:04:05.000000Z" // fixed width: text order is time order

func formatTime(t time.Time) string { return t.UTC().Format(timeFormat) }

func parseTime(s string) (time.Time, error) { return time.Parse(time.RFC3339Nano, s) }

// Seeded reports whether the database was ever given its first runs
// (MarkSeeded): the bundled examples go into a new database once, and do
// not come back after they are deleted.
func (s *Store) Seeded(ctx context.Context) (bool, error) {
	var n int
	if err := s.reader.QueryRowContext(ctx, "SELECT count(*) FROM secrets WHERE name = 'seeded'").Scan(&n); err != nil {
		return false, fmt.Errorf("seeded: %w", err)
	}
	return n > 0, nil
}

// MarkSeeded records that the database has had runs.
func (s *Store) MarkSeeded(ctx context.Context) error {
	insert, onConflict := s.dialect.insertIgnore("secrets")
	return s.inTx(ctx, func(tx *tx) error {
		_, err := tx.ExecContext(ctx, insert+" (name, value) VALUES (?, ?)"+onConflict, "seeded", []byte(formatTime(s.now())))
		return err
	})
}
