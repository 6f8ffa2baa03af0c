package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrUnauthorized is a missing, malformed, unknown or revoked API key. Its
// text never says which.
var ErrUnauthorized = errors.New("unauthorized")

// ErrForbidden is a valid key acting on what it does not own.
var ErrForbidden = errors.New("forbidden")

// Key is an API key as stored: never the secret itself.
type Key struct {
	ID         string
	Name       string
	Admin      bool
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

const keyPrefix = "mxd_"

var keyEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// MaxKeyNameLen bounds a key's name, which runs carry as submitted_by.
const MaxKeyNameLen = 64

// ValidKeyName reports whether name can name a key: 1–64 letters, digits,
// '.', '_', '-' or '@'.
func ValidKeyName(name string) bool {
	if name == "" || len(name) > MaxKeyNameLen {
		return false
	}
	for _, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._-@", c)
		if !ok {
			return false
		}
	}
	return true
}

// CreateKey stores a new key named name and returns it with its secret
// token, which is not stored and cannot be shown again. Names are never
// reused, even after a key is revoked.
func (s *Store) CreateKey(ctx context.Context, name string, admin bool) (Key, string, error) {
	if msg := TextProblem(name, false); msg != "" {
		return Key{}, "", &FieldError{Field: "name", Message: msg}
	}
	if !ValidKeyName(name) {
		return Key{}, "", &FieldError{Field: "name", Message: "a key name is 1–64 letters, digits, '.', '_', '-' or '@'"}
	}
	var idb [8]byte
	var secret [32]byte
	if _, err := rand.Read(idb[:]); err != nil {
		return Key{}, "", err
	}
	if _, err := rand.Read(secret[:]); err != nil {
		return Key{}, "", err
	}
	id := strings.ToLower(keyEncoding.EncodeToString(idb[:]))
	sec := strings.ToLower(keyEncoding.EncodeToString(secret[:]))
	hash := sha256.Sum256([]byte(sec))
	k := Key{ID: id, Name: name, Admin: admin, CreatedAt: s.now().UTC().Truncate(time.Microsecond)}
	err := s.inTx(ctx, func(tx *tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO api_keys (id, name, secret_hash, admin, created_at) VALUES (?, ?, ?, ?, ?)",
			id, name, hash[:], boolInt(admin), formatTime(k.CreatedAt))
		return err
	})
	if isUnique(err) {
		return Key{}, "", newError(ErrConflict, "a key named %s exists already (names are never reused)", name)
	}
	if err != nil {
		return Key{}, "", fmt.Errorf("create key: %w", err)
	}
	return k, keyPrefix + id + "_" + sec, nil
}

// Authenticate returns the live key whose token this is, and notes its use
// (at most once a minute, to spare the writer). Anything else is
// ErrUnauthorized.
func (s *Store) Authenticate(ctx context.Context, token string) (Key, error) {
	rest, ok := strings.CutPrefix(token, keyPrefix)
	id, sec, ok2 := strings.Cut(rest, "_")
	if !ok || !ok2 || len(id) != 13 || len(sec) != 52 {
		return Key{}, ErrUnauthorized
	}
	// Only an id of the keys' alphabet is looked up: other bytes (NUL, or
	// not UTF-8) are no key, and PostgreSQL would refuse them as text.
	if _, err := keyEncoding.DecodeString(strings.ToUpper(id)); err != nil {
		return Key{}, ErrUnauthorized
	}
	var (
		k        Key
		hash     []byte
		created  string
		lastUsed *string
		revoked  *string
	)
	err := s.reader.QueryRowContext(ctx, "SELECT id, name, secret_hash, admin, created_at, last_used_at, revoked_at FROM api_keys WHERE id = ?", id).
		Scan(&k.ID, &k.Name, &hash, &k.Admin, &created, &lastUsed, &revoked)
	given := sha256.Sum256([]byte(sec))
	if errors.Is(err, sql.ErrNoRows) {
		hash = make([]byte, len(given)) // compare anyway: the same work for unknown ids
	} else if err != nil {
		return Key{}, fmt.Errorf("authenticate: %w", err)
	}
	if subtle.ConstantTimeCompare(hash, given[:]) != 1 || err != nil || revoked != nil {
		return Key{}, ErrUnauthorized
	}
	now := s.now().UTC()
	if lastUsed == nil || *lastUsed < formatTime(now.Add(-time.Minute)) {
		err := s.inTx(ctx, func(tx *tx) error {
			_, err := tx.ExecContext(ctx, "UPDATE api_keys SET last_used_at = ? WHERE id = ?", formatTime(now), k.ID)
			return err
		})
		if err != nil {
			return Key{}, fmt.Errorf("authenticate: %w", err)
		}
	}
	if k.CreatedAt, err = parseTime(created); err != nil {
		return Key{}, fmt.Errorf("key %s created_at: %w", k.Name, err)
	}
	return k, nil
}

// Keys lists every key, revoked ones too, oldest first.
func (s *Store) Keys(ctx context.Context) ([]Key, error) {
	rows, err := s.reader.QueryContext(ctx, "SELECT id, name, admin, created_at, last_used_at, revoked_at FROM api_keys ORDER BY created_at, name")
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	defer rows.Close()
	var keys []Key
	for rows.Next() {
		var (
			k                 Key
			created           string
			lastUsed, revoked *string
		)
		if err := rows.Scan(&k.ID, &k.Name, &k.Admin, &created, &lastUsed, &revoked); err != nil {
			return nil, err
		}
		if k.CreatedAt, err = parseTime(created); err != nil {
			return nil, err
		}
		if k.LastUsedAt, err = optTime(lastUsed); err != nil {
			return nil, err
		}
		if k.RevokedAt, err = optTime(revoked); err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, rows.Err()
}

func optTime(s *string) (*time.Time, error) {
	if s == nil {
		return nil, nil
	}
	t, err := parseTime(*s)
	return &t, err
}

// RevokeKey revokes the key named name; its runs stay. It reports whether
// the key was live: revoking a revoked key changes nothing.
func (s *Store) RevokeKey(ctx context.Context, name string) (revoked bool, err error) {
	err = s.inTx(ctx, func(tx *tx) error {
		revoked = false
		var was *string
		err := tx.QueryRowContext(ctx, "SELECT revoked_at FROM api_keys WHERE name = ?"+tx.d.forUpdate(), name).Scan(&was)
		if errors.Is(err, sql.ErrNoRows) {
			return newError(ErrNotFound, "no key is named %s", name)
		}
		if err != nil || was != nil {
			return err
		}
		revoked = true
		_, err = tx.ExecContext(ctx, "UPDATE api_keys SET revoked_at = ? WHERE name = ?", formatTime(s.now()), name)
		return err
	})
	return revoked, err
}
