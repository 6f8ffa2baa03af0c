package store

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Source is the exact bytes a run was made from: the submitted run JSON,
// the published page, or a tool's output as the multipart/form-data body
// that carried it (every part with its name and file name).
type Source struct {
	MediaType string // as sent, e.g. "multipart/form-data; boundary=…"
	Format    string // one of the Format constants
	Data      []byte
}

// Source formats: how the bytes became the run.
const (
	FormatRunJSON = "run-json"
	FormatPage    = "page"
)

// MaxSourceBytes bounds the bytes kept for one run (the server's body limit
// is tighter).
const MaxSourceBytes = 8 << 20

// Provenance is what is known of where a stored run came from.
type Provenance struct {
	SourceSHA256    string // lower-case hex; "" when the bytes were not kept
	SourceMediaType string
	SourceFormat    string
	SourceSize      int64
	SignedBy        string // the fingerprint of the signing key
	Signature       string // base64 Ed25519 signature over the source bytes
}

// Moderation is a run's flags and hidden state.
type Moderation struct {
	OpenFlags    int
	HiddenAt     *time.Time
	HiddenBy     string
	HiddenReason string
}

// stampSource fills r's Provenance from the Source it is stored with.
func (r *Run) stampSource() {
	if r.Source == nil {
		return
	}
	sum := sha256.Sum256(r.Source.Data)
	r.Provenance.SourceSHA256, r.Provenance.SourceMediaType = hex.EncodeToString(sum[:]), r.Source.MediaType
	r.Provenance.SourceFormat, r.Provenance.SourceSize = r.Source.Format, int64(len(r.Source.Data))
}

// gone is the error a hidden run answers reads with.
func (r Run) gone() error {
	if r.Moderation.HiddenAt == nil {
		return nil
	}
	return &Error{Kind: ErrGone, Msg: fmt.Sprintf("run %s was hidden by a moderator on %s: %s",
		r.ID, r.Moderation.HiddenAt.Format(time.DateOnly), r.Moderation.HiddenReason)}
}

// visible is nil for a stored, visible run; ErrGone for a hidden one and
// ErrNotFound for none.
func visible(ctx context.Context, q querier, id string) error {
	var hiddenAt, reason *string
	err := q.QueryRowContext(ctx, "SELECT hidden_at, hidden_reason FROM runs WHERE id = ?", id).Scan(&hiddenAt, &reason)
	if errors.Is(err, sql.ErrNoRows) {
		return runNotFound(id)
	}
	if err != nil || hiddenAt == nil {
		return err
	}
	r := Run{ID: id}
	r.Moderation.HiddenReason = deref(reason)
	t, err := parseTime(*hiddenAt)
	if err != nil {
		return err
	}
	r.Moderation.HiddenAt = &t
	return r.gone()
}

// putSource keeps data once and returns its hash.
func putSource(ctx context.Context, tx *tx, data []byte) (string, error) {
	if len(data) > MaxSourceBytes {
		return "", newError(ErrInvalid, "the source is %d bytes, more than the %d kept for one run", len(data), MaxSourceBytes)
	}
	sum := sha256.Sum256(data)
	h := hex.EncodeToString(sum[:])
	insert, onConflict := tx.d.insertIgnore("sources")
	_, err := tx.ExecContext(ctx, insert+" (sha256, size, data) VALUES (?, ?, ?)"+onConflict, h, len(data), data)
	return h, err
}

// RunSource returns the bytes run id came from: ErrGone for a hidden run,
// ErrNotFound for none or for one whose bytes were not kept.
func (s *Store) RunSource(ctx context.Context, id string) (Source, Provenance, error) {
	t, err := s.reader.begin(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return Source{}, Provenance{}, err
	}
	defer t.Rollback()
	r, err := readRun(ctx, t, id)
	if err == nil {
		err = r.gone()
	}
	if err != nil {
		return Source{}, Provenance{}, err
	}
	p := r.Provenance
	if p.SourceSHA256 == "" {
		return Source{}, p, newError(ErrNotFound, "the bytes run %s came from were not kept: it was stored before matrixd kept sources, or made on the server (matrixd generate)", id)
	}
	src := Source{MediaType: p.SourceMediaType, Format: p.SourceFormat}
	if err := t.QueryRowContext(ctx, "SELECT data FROM sources WHERE sha256 = ?", p.SourceSHA256).Scan(&src.Data); err != nil {
		return Source{}, Provenance{}, fmt.Errorf("source of run %s: %w", id, err)
	}
	return src, p, nil
}

// AttachSource gives the stored run of r's content the bytes it came from,
// when it has none (runs seeded before sources were kept). It reports
// whether it did.
func (s *Store) AttachSource(ctx context.Context, r Run) (bool, error) {
	if r.Source == nil {
		return false, errors.New("attach source: the run has no source")
	}
	hash := r.ContentHash()
	attached := false
	err := s.inTx(ctx, func(tx *tx) error {
		attached = false
		var id string
		err := tx.QueryRowContext(ctx, "SELECT id FROM runs WHERE content_hash = ?", hash).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err == nil {
			err = lockRun(ctx, tx, id)
		}
		if errors.Is(err, ErrNotFound) {
			return nil // deleted meanwhile
		}
		if err != nil {
			return err
		}
		var kept *string
		if err := tx.QueryRowContext(ctx, "SELECT source_sha256 FROM runs WHERE id = ?", id).Scan(&kept); err != nil || kept != nil {
			return err
		}
		sha, err := putSource(ctx, tx, r.Source.Data)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE runs SET source_sha256 = ?, source_media_type = ?, source_format = ? WHERE id = ?",
			sha, r.Source.MediaType, r.Source.Format, id); err != nil {
			return err
		}
		attached = true
		return logEvent(ctx, tx, id, "", ActionSource, map[string]any{"source_sha256": sha}, s.now())
	})
	if err != nil {
		return false, fmt.Errorf("attach source: %w", err)
	}
	return attached, nil
}

// AttachOrigin gives the stored run of r's content where it came from (r's
// source_url, publisher, licence and retrieval date) when it states none
// of them (runs seeded before they were kept). It reports whether it did.
func (s *Store) AttachOrigin(ctx context.Context, r Run) (bool, error) {
	if r.Publisher == "" && r.License == "" && r.RetrievedAt == "" {
		return false, nil
	}
	hash := r.ContentHash()
	attached := false
	err := s.inTx(ctx, func(tx *tx) error {
		var id string
		err := tx.QueryRowContext(ctx, "SELECT id FROM runs WHERE content_hash = ? AND publisher IS NULL AND license IS NULL AND retrieved_at IS NULL", hash).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			attached = false
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE runs SET source_url = coalesce(source_url, ?), publisher = ?, license = ?, retrieved_at = ? WHERE id = ?",
			nullStr(r.SourceURL), nullStr(r.Publisher), nullStr(r.License), nullStr(r.RetrievedAt), id); err != nil {
			return err
		}
		attached = true
		return logEvent(ctx, tx, id, "", ActionUpdate, map[string]any{"publisher": nullStr(r.Publisher), "license": nullStr(r.License), "retrieved_at": nullStr(r.RetrievedAt)}, s.now())
	})
	if err != nil {
		return false, fmt.Errorf("attach origin: %w", err)
	}
	return attached, nil
}

// Audit actions: every change to a run is one event.
const (
	ActionCreate  = "create"
	ActionUpdate  = "update"
	ActionFlag    = "flag"
	ActionResolve = "resolve"
	ActionHide    = "hide"
	ActionRestore = "restore"
	ActionDelete  = "delete"
	ActionSource  = "source"
)

// Event is one change to a run.
type Event struct {
	ID      int64
	At      time.Time
	KeyName string // "" for the server itself
	Action  string
	Detail  json.RawMessage
}

func logEvent(ctx context.Context, tx *tx, runID, keyName, action string, detail any, at time.Time) error {
	b, err := json.Marshal(detail)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, "INSERT INTO run_events (run_id, at, key_name, action, detail) VALUES (?, ?, ?, ?, ?)",
		runID, formatTime(at), nullStr(keyName), action, string(b))
	return err
}

// History returns up to limit of run id's changes, oldest first, starting
// after pageCursor (empty for the first page), and the cursor of the next
// page ("" on the last); a deleted or hidden run's too. ErrNotFound when
// the run never had any.
func (s *Store) History(ctx context.Context, id string, limit int, pageCursor string) ([]Event, string, error) {
	if limit < 1 {
		return nil, "", &FieldError{Field: "limit", Message: "must be at least 1"}
	}
	qk := queryKey("history", id)
	after := int64(0)
	if pageCursor != "" {
		c, err := s.decodeCursor(pageCursor, qk)
		if err != nil {
			return nil, "", err
		}
		k, ok := c.Key.(float64)
		if !ok || k < 0 || k != float64(int64(k)) {
			return nil, "", badCursor("problem.cursor_not_issued", "not one this API issued; pass next_cursor back unchanged")
		}
		after = int64(k)
	}
	rows, err := s.reader.QueryContext(ctx, "SELECT id, at, key_name, action, detail FROM run_events WHERE run_id = ? AND id > ? ORDER BY id LIMIT ?",
		id, after, limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("history of %s: %w", id, err)
	}
	defer rows.Close()
	out := []Event{}
	for rows.Next() {
		var (
			e          Event
			at, detail string
			key        *string
		)
		if err := rows.Scan(&e.ID, &at, &key, &e.Action, &detail); err != nil {
			return nil, "", fmt.Errorf("history of %s: %w", id, err)
		}
		if e.At, err = parseTime(at); err != nil {
			return nil, "", err
		}
		e.KeyName, e.Detail = deref(key), json.RawMessage(detail)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("history of %s: %w", id, err)
	}
	if len(out) == 0 && pageCursor == "" {
		if err := runExists(ctx, s.reader, id); err != nil {
			return nil, "", err
		}
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = s.encodeCursor(cursor{Query: qk, Key: float64(out[limit-1].ID), ID: id})
	}
	return out, next, nil
}

// Flag reasons.
var FlagReasons = []string{"implausible", "wrong_hardware", "duplicate", "spam", "other"}

// MaxFlagText bounds a flag's text and a moderator's reason or note.
const MaxFlagText = 2000

// Flag is a reader's report that a run is wrong.
type Flag struct {
	ID         int64
	RunID      string
	KeyName    string
	Reason     string
	Text       string
	CreatedAt  time.Time
	ResolvedAt *time.Time
	ResolvedBy string
	Resolution string
}

func checkText(field, v string, required bool) error {
	switch {
	case required && strings.TrimSpace(v) == "":
		return &FieldError{Field: field, Message: "is required"}
	case utf8.RuneCountInString(v) > MaxFlagText:
		return &FieldError{Field: field, Message: fmt.Sprintf("at most %d characters", MaxFlagText)}
	}
	if msg := TextProblem(v, true); msg != "" {
		return &FieldError{Field: field, Message: msg}
	}
	return nil
}

// FlagRun records by's flag on run id. A key has one open flag per run: a
// second is ErrConflict until the first is resolved.
func (s *Store) FlagRun(ctx context.Context, id string, by Key, reason, text string) (Flag, error) {
	if !slices.Contains(FlagReasons, reason) {
		return Flag{}, &FieldError{Field: "reason", Message: "one of " + strings.Join(FlagReasons, ", ")}
	}
	if err := checkText("text", text, true); err != nil {
		return Flag{}, err
	}
	f := Flag{RunID: id, KeyName: by.Name, Reason: reason, Text: text, CreatedAt: s.now().UTC().Truncate(time.Microsecond)}
	err := s.inTx(ctx, func(tx *tx) error {
		if err := lockRun(ctx, tx, id); err != nil {
			return err
		}
		if err := visible(ctx, tx, id); err != nil {
			return err
		}
		insert, onConflict := tx.d.insertIgnore("run_flags")
		res, err := tx.ExecContext(ctx, insert+" (run_id, key_name, reason, text, created_at) VALUES (?, ?, ?, ?, ?)"+onConflict,
			id, by.Name, reason, text, formatTime(f.CreatedAt))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			if err == nil {
				err = newError(ErrConflict, "key %s has an open flag on run %s already; one open flag per key and run (see GET /v1/runs/%s/flags)", by.Name, id, id)
			}
			return err
		}
		if err := tx.QueryRowContext(ctx, "SELECT id FROM run_flags WHERE run_id = ? AND key_name = ? AND resolved_at IS NULL", id, by.Name).Scan(&f.ID); err != nil {
			return err
		}
		return logEvent(ctx, tx, id, by.Name, ActionFlag, map[string]any{"flag_id": f.ID, "reason": reason}, f.CreatedAt)
	})
	if err != nil {
		return Flag{}, fmt.Errorf("flag run %s: %w", id, err)
	}
	return f, nil
}

const flagColumns = "id, run_id, key_name, reason, text, created_at, resolved_at, resolved_by, resolution"

func scanFlag(row interface{ Scan(...any) error }) (Flag, error) {
	var (
		f                    Flag
		created              string
		resolved, by, answer *string
	)
	if err := row.Scan(&f.ID, &f.RunID, &f.KeyName, &f.Reason, &f.Text, &created, &resolved, &by, &answer); err != nil {
		return Flag{}, err
	}
	var err error
	if f.CreatedAt, err = parseTime(created); err != nil {
		return Flag{}, err
	}
	if f.ResolvedAt, err = optTime(resolved); err != nil {
		return Flag{}, err
	}
	f.ResolvedBy, f.Resolution = deref(by), deref(answer)
	return f, nil
}

// Flags lists run id's flags, oldest first, resolved ones too; a hidden
// run's as well (they say why it may have been hidden).
func (s *Store) Flags(ctx context.Context, id string) ([]Flag, error) {
	t, err := s.reader.begin(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer t.Rollback()
	if err := runExists(ctx, t, id); err != nil {
		return nil, err
	}
	rows, err := t.QueryContext(ctx, "SELECT "+flagColumns+" FROM run_flags WHERE run_id = ? ORDER BY id", id)
	if err != nil {
		return nil, fmt.Errorf("flags of %s: %w", id, err)
	}
	defer rows.Close()
	out := []Flag{}
	for rows.Next() {
		f, err := scanFlag(rows)
		if err != nil {
			return nil, fmt.Errorf("flags of %s: %w", id, err)
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

func needAdmin(by Key, what string) error {
	if !by.Admin {
		return newError(ErrForbidden, "only an admin key may %s (matrixd keys create --admin)", what)
	}
	return nil
}

// ResolveFlag closes flag flagID of run id with a note, on behalf of an
// admin key.
func (s *Store) ResolveFlag(ctx context.Context, id string, flagID int64, by Key, note string) (Flag, error) {
	if err := needAdmin(by, "resolve a flag"); err != nil {
		return Flag{}, err
	}
	if err := checkText("note", note, true); err != nil {
		return Flag{}, err
	}
	var f Flag
	err := s.inTx(ctx, func(tx *tx) error {
		if err := lockRun(ctx, tx, id); err != nil {
			return err
		}
		var err error
		f, err = scanFlag(tx.QueryRowContext(ctx, "SELECT "+flagColumns+" FROM run_flags WHERE id = ? AND run_id = ?", flagID, id))
		if errors.Is(err, sql.ErrNoRows) {
			return newError(ErrNotFound, "run %s has no flag %d", id, flagID)
		}
		if err != nil {
			return err
		}
		if f.ResolvedAt != nil {
			return newError(ErrConflict, "flag %d was resolved already, on %s by %s", flagID, f.ResolvedAt.Format(time.DateOnly), f.ResolvedBy)
		}
		now := s.now().UTC().Truncate(time.Microsecond)
		if _, err := tx.ExecContext(ctx, "UPDATE run_flags SET resolved_at = ?, resolved_by = ?, resolution = ? WHERE id = ?",
			formatTime(now), by.Name, note, flagID); err != nil {
			return err
		}
		f.ResolvedAt, f.ResolvedBy, f.Resolution = &now, by.Name, note
		return logEvent(ctx, tx, id, by.Name, ActionResolve, map[string]any{"flag_id": flagID, "note": note}, now)
	})
	if err != nil {
		return Flag{}, fmt.Errorf("resolve flag %d of run %s: %w", flagID, id, err)
	}
	return f, nil
}

// HideRun hides run id from every read, list, leaderboard, catalog and the
// calculator, on behalf of an admin key, saying why.
func (s *Store) HideRun(ctx context.Context, id string, by Key, reason string) (Moderation, error) {
	if err := needAdmin(by, "hide a run"); err != nil {
		return Moderation{}, err
	}
	if err := checkText("reason", reason, true); err != nil {
		return Moderation{}, err
	}
	var m Moderation
	err := s.inTx(ctx, func(tx *tx) error {
		if err := lockRun(ctx, tx, id); err != nil {
			return err
		}
		r, err := readRun(ctx, tx, id)
		if err != nil {
			return err
		}
		if r.Moderation.HiddenAt != nil {
			return newError(ErrConflict, "run %s is hidden already, since %s; restore it first to hide it for another reason", id, r.Moderation.HiddenAt.Format(time.DateOnly))
		}
		now := s.now().UTC().Truncate(time.Microsecond)
		if _, err := tx.ExecContext(ctx, "UPDATE runs SET hidden_at = ?, hidden_by = ?, hidden_reason = ? WHERE id = ?",
			formatTime(now), by.Name, reason, id); err != nil {
			return err
		}
		m = r.Moderation
		m.HiddenAt, m.HiddenBy, m.HiddenReason = &now, by.Name, reason
		return logEvent(ctx, tx, id, by.Name, ActionHide, map[string]any{"reason": reason}, now)
	})
	if err != nil {
		return Moderation{}, fmt.Errorf("hide run %s: %w", id, err)
	}
	return m, nil
}

// RestoreRun makes hidden run id visible again, on behalf of an admin key.
func (s *Store) RestoreRun(ctx context.Context, id string, by Key) (Moderation, error) {
	if err := needAdmin(by, "restore a run"); err != nil {
		return Moderation{}, err
	}
	var m Moderation
	err := s.inTx(ctx, func(tx *tx) error {
		if err := lockRun(ctx, tx, id); err != nil {
			return err
		}
		r, err := readRun(ctx, tx, id)
		if err != nil {
			return err
		}
		if r.Moderation.HiddenAt == nil {
			return newError(ErrConflict, "run %s is not hidden", id)
		}
		if _, err := tx.ExecContext(ctx, "UPDATE runs SET hidden_at = NULL, hidden_by = NULL, hidden_reason = NULL WHERE id = ?", id); err != nil {
			return err
		}
		m = Moderation{OpenFlags: r.Moderation.OpenFlags}
		return logEvent(ctx, tx, id, by.Name, ActionRestore, map[string]any{"was_hidden_for": r.Moderation.HiddenReason}, s.now())
	})
	if err != nil {
		return Moderation{}, fmt.Errorf("restore run %s: %w", id, err)
	}
	return m, nil
}

// SigningKey is an Ed25519 public key an API key registered to sign its
// submissions with.
type SigningKey struct {
	Fingerprint string // lower-case hex SHA-256 of the 32 raw key bytes
	KeyName     string
	PublicKey   ed25519.PublicKey
	CreatedAt   time.Time
}

// Fingerprint names an Ed25519 public key: the lower-case hex SHA-256 of
// its 32 raw bytes.
func Fingerprint(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:])
}

// RegisterSigningKey registers pub for the API key named keyName, proof
// (base64) being pub's signature over SigningKeyStatement(keyName, pub).
// A weak key (CheckPublicKey) or a proof that does not verify is a
// FieldError. The same key registered again answers the record (created
// false); a key another API key registered is ErrConflict.
func (s *Store) RegisterSigningKey(ctx context.Context, keyName string, pub ed25519.PublicKey, proof string) (SigningKey, bool, error) {
	if err := CheckPublicKey(pub); err != nil {
		return SigningKey{}, false, &FieldError{Field: "public_key", Message: err.Error()}
	}
	if err := checkProof(keyName, pub, proof); err != nil {
		return SigningKey{}, false, err
	}
	k := SigningKey{Fingerprint: Fingerprint(pub), KeyName: keyName, PublicKey: pub, CreatedAt: s.now().UTC().Truncate(time.Microsecond)}
	created := false
	err := s.inTx(ctx, func(tx *tx) error {
		created = false
		insert, onConflict := tx.d.insertIgnore("signing_keys")
		res, err := tx.ExecContext(ctx, insert+" (fingerprint, key_name, public_key, created_at) VALUES (?, ?, ?, ?)"+onConflict,
			k.Fingerprint, keyName, []byte(pub), formatTime(k.CreatedAt))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			created = n == 1
			return err
		}
		stored, err := signingKey(ctx, tx, k.Fingerprint)
		if err != nil {
			return err
		}
		if stored.KeyName != keyName {
			return newError(ErrConflict, "this public key is registered to another API key; make a key pair of your own")
		}
		k = stored
		return nil
	})
	if err != nil {
		return SigningKey{}, false, fmt.Errorf("register signing key: %w", err)
	}
	return k, created, nil
}

// SigningKey returns the registered key with this fingerprint.
func (s *Store) SigningKey(ctx context.Context, fingerprint string) (SigningKey, error) {
	return signingKey(ctx, s.reader, fingerprint)
}

func signingKey(ctx context.Context, q querier, fingerprint string) (SigningKey, error) {
	var (
		k       SigningKey
		pub     []byte
		created string
	)
	err := q.QueryRowContext(ctx, "SELECT fingerprint, key_name, public_key, created_at FROM signing_keys WHERE fingerprint = ?", fingerprint).
		Scan(&k.Fingerprint, &k.KeyName, &pub, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return SigningKey{}, newError(ErrNotFound, "no signing key has fingerprint %s", fingerprint)
	}
	if err != nil {
		return SigningKey{}, fmt.Errorf("signing key %s: %w", fingerprint, err)
	}
	k.PublicKey = ed25519.PublicKey(pub)
	if k.CreatedAt, err = parseTime(created); err != nil {
		return SigningKey{}, err
	}
	return k, nil
}

// SigningKeys lists the signing keys the API key named keyName registered,
// oldest first; every key's with keyName "".
func (s *Store) SigningKeys(ctx context.Context, keyName string) ([]SigningKey, error) {
	q, args := "SELECT fingerprint FROM signing_keys ORDER BY key_name, created_at", []any{}
	if keyName != "" {
		q, args = "SELECT fingerprint FROM signing_keys WHERE key_name = ? ORDER BY key_name, created_at", []any{keyName}
	}
	rows, err := s.reader.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("signing keys: %w", err)
	}
	var fps []string
	for rows.Next() {
		var fp string
		if err := rows.Scan(&fp); err != nil {
			rows.Close()
			return nil, err
		}
		fps = append(fps, fp)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]SigningKey, 0, len(fps))
	for _, fp := range fps {
		k, err := s.SigningKey(ctx, fp)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, nil
}

// VerifySignature checks sig over data against the signing key
// fingerprint names, which the API key keyName must have registered. A
// stored weak key (registered before they were refused) verifies nothing.
func (s *Store) VerifySignature(ctx context.Context, keyName, fingerprint string, data, sig []byte) error {
	k, err := s.SigningKey(ctx, fingerprint)
	if errors.Is(err, ErrNotFound) || err == nil && k.KeyName != keyName {
		return newError(ErrForbidden, "signing key %s is not registered to this API key: register its public key with POST /v1/signing-keys", fingerprint)
	}
	if err != nil {
		return err
	}
	if err := CheckPublicKey(k.PublicKey); err != nil {
		return &FieldError{Field: "Body-Signature-Key", Message: "signing key " + fingerprint + " " + err.Error() +
			"; it was registered before matrixd refused such keys and verifies nothing: register a new one (POST /v1/signing-keys)"}
	}
	if !VerifyEd25519(k.PublicKey, data, sig) {
		return &FieldError{Field: "Body-Signature", Message: "does not verify over the body's exact bytes with signing key " + fingerprint}
	}
	return nil
}

// SubmitterProfile is what the visible runs say of one submitter (the
// author, as sources name them).
type SubmitterProfile struct {
	Name        string // as their newest run writes it
	RunCount    int
	FirstRunAt  time.Time
	LatestRunAt time.Time
}

// Submitter returns the profile of the submitter named name (case aside).
func (s *Store) Submitter(ctx context.Context, name string) (SubmitterProfile, error) {
	var (
		p             SubmitterProfile
		first, latest *string
	)
	w := s.dialect.eqNoCase("r.submitter") + " AND r.hidden_at IS NULL"
	if err := s.reader.QueryRowContext(ctx, "SELECT count(*), min(r.created_at), max(r.created_at) FROM runs r WHERE "+w, name).
		Scan(&p.RunCount, &first, &latest); err != nil {
		return p, fmt.Errorf("submitter: %w", err)
	}
	if p.RunCount == 0 {
		return p, newError(ErrNotFound, "no visible run names submitter %s", name)
	}
	if err := s.reader.QueryRowContext(ctx, "SELECT r.submitter FROM runs r WHERE "+w+" ORDER BY r.created_at DESC, r.id DESC LIMIT 1", name).Scan(&p.Name); err != nil {
		return p, fmt.Errorf("submitter: %w", err)
	}
	var err error
	if p.FirstRunAt, err = parseTime(*first); err != nil {
		return p, err
	}
	if p.LatestRunAt, err = parseTime(*latest); err != nil {
		return p, err
	}
	return p, nil
}

// DecodeSignature reads "ed25519=BASE64" (RFC 4648 base64, padded or not).
func DecodeSignature(h string) ([]byte, error) {
	v, ok := strings.CutPrefix(strings.TrimSpace(h), "ed25519=")
	if !ok {
		return nil, errors.New(`want ed25519=BASE64 (the base64 of the 64-byte Ed25519 signature over the body's exact bytes)`)
	}
	sig, ok := decodeBase64(v)
	if !ok || len(sig) != ed25519.SignatureSize {
		return nil, errors.New("not the base64 of a 64-byte Ed25519 signature")
	}
	return sig, nil
}

// SubmitterCount is a submitter's entry in the catalog of submitters.
type SubmitterCount struct {
	Name           string // as their newest run writes it
	RunCount       int
	UnflaggedCount int // runs no plausibility check flagged
	// CorroboratedCount and DisputedCount are the runs independent runs
	// corroborate and dispute.
	CorroboratedCount, DisputedCount int
	LatestRunAt                      time.Time
}

// Submitters lists every submitter of a visible run, names that differ
// only in case taken as one, most runs first.
func (s *Store) Submitters(ctx context.Context) ([]SubmitterCount, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT submitter, count(*), sum(1 - flagged),
		sum(CASE WHEN corroboration_status = 'corroborated' THEN 1 ELSE 0 END), sum(disputed), max(created_at) FROM runs
		WHERE hidden_at IS NULL AND submitter IS NOT NULL AND submitter <> '' GROUP BY submitter`)
	if err != nil {
		return nil, fmt.Errorf("submitters: %w", err)
	}
	defer rows.Close()
	var out []SubmitterCount
	at := map[string]int{} // lower-case name → index in out
	for rows.Next() {
		var (
			c      SubmitterCount
			latest string
		)
		if err := rows.Scan(&c.Name, &c.RunCount, &c.UnflaggedCount, &c.CorroboratedCount, &c.DisputedCount, &latest); err != nil {
			return nil, fmt.Errorf("submitters: %w", err)
		}
		if c.LatestRunAt, err = parseTime(latest); err != nil {
			return nil, err
		}
		key := strings.ToLower(c.Name)
		i, ok := at[key]
		if !ok {
			at[key] = len(out)
			out = append(out, c)
			continue
		}
		o := &out[i]
		o.RunCount += c.RunCount
		o.UnflaggedCount += c.UnflaggedCount
		o.CorroboratedCount += c.CorroboratedCount
		o.DisputedCount += c.DisputedCount
		if c.LatestRunAt.After(o.LatestRunAt) {
			o.Name, o.LatestRunAt = c.Name, c.LatestRunAt
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b SubmitterCount) int {
		if a.RunCount != b.RunCount {
			return b.RunCount - a.RunCount
		}
		return strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name))
	})
	return out, nil
}
