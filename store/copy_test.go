package store_test

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver

	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

// TestCopyCoversEverySchemaTable holds copy's list of tables to the
// schema each backend's migrations make: a migration that adds a table
// fails here until copy moves it (or names it as kept by the destination).
func TestCopyCoversEverySchemaTable(t *testing.T) {
	ctx := context.Background()
	copied, derived := store.CopiedTables(), store.DerivedTables()
	forEachBackend(t, func(t *testing.T, backend string) {
		var (
			driver, dsn, q string
		)
		switch backend {
		case "postgres":
			driver, dsn = "pgx", storetest.PostgresSchema(t, os.Getenv("MATRIXD_TEST_POSTGRES"))
			q = "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
		default:
			driver, dsn = "sqlite", filepath.Join(t.TempDir(), "schema.db")
			q = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
		}
		st, err := store.Open(ctx, dsn, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		st.Close()
		db, err := sql.Open(driver, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		rows, err := db.QueryContext(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var schema []string
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				t.Fatal(err)
			}
			schema = append(schema, name)
			if !slices.Contains(copied, name) && !slices.Contains(derived, name) {
				t.Errorf("table %s is in the schema but copy neither copies it nor leaves it to the destination", name)
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		for _, name := range copied {
			if !slices.Contains(schema, name) {
				t.Errorf("copy copies table %s, which the schema does not have", name)
			}
			if slices.Contains(derived, name) {
				t.Errorf("table %s is both copied and left to the destination", name)
			}
		}
	})
}

// copyFixture is a database with a row in every table copy moves: signed
// runs and their source bytes, a registered signing key, API keys, an
// edited, a hidden and a restored run, open and resolved flags,
// idempotency records, a fit and a refusal, and the seeded mark.
type copyFixture struct {
	ids      []string // every run, hidden ones too
	signed   []string // runs signed with the signing key
	visible  []string
	fp       string
	idem     map[string]store.Idempotency // by run id
	runs     map[string]store.Run         // as submitted, by id
	fitRuns  []string
	keyNames []string
}

const fitMethod = "test-method"

func buildCopyFixture(t *testing.T, st *store.Store) copyFixture {
	t.Helper()
	ctx := context.Background()
	f := copyFixture{idem: map[string]store.Idempotency{}, runs: map[string]store.Run{}, keyNames: []string{"alice", "ops"}}
	alice, _, err := st.CreateKey(ctx, "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	ops, _, err := st.CreateKey(ctx, "ops", true)
	if err != nil {
		t.Fatal(err)
	}
	priv := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	sk, _, err := registerSigningKey(ctx, st, "alice", priv)
	if err != nil {
		t.Fatal(err)
	}
	f.fp = sk.Fingerprint
	for i, r := range storetest.Runs(4242, 6) {
		r.SubmittedBy = "alice"
		if i < 4 {
			data := []byte(fmt.Sprintf(`{"run": %d, "title": %q}`, i, r.Title))
			r.Source = &store.Source{MediaType: "application/json", Format: store.FormatRunJSON, Data: data}
			r.Provenance.SignedBy = f.fp
			r.Provenance.Signature = base64.StdEncoding.EncodeToString(ed25519.Sign(priv, data))
		}
		idem := store.Idempotency{KeyName: "alice", Key: fmt.Sprintf("idem-%d", i), RequestHash: fmt.Sprintf("request-%d", i)}
		stored, res, err := st.SubmitRun(ctx, r, &idem)
		if err != nil || !res.Created {
			t.Fatalf("submit run %d: %+v, %v", i, res, err)
		}
		f.ids = append(f.ids, stored.ID)
		f.idem[stored.ID] = idem
		f.runs[stored.ID] = r
		if i < 4 {
			f.signed = append(f.signed, stored.ID)
		}
	}
	title, notes := "an edited title", "measured twice"
	if _, err := st.UpdateRunMeta(ctx, f.ids[0], store.MetaPatch{Title: &title, Notes: &notes}, alice); err != nil {
		t.Fatal(err)
	}
	if _, err := st.HideRun(ctx, f.ids[1], ops, "spam"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RestoreRun(ctx, f.ids[1], ops); err != nil {
		t.Fatal(err)
	}
	if _, err := st.HideRun(ctx, f.ids[5], ops, "duplicate of another run"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.FlagRun(ctx, f.ids[2], ops, "implausible", "faster than the GPU's bandwidth allows"); err != nil {
		t.Fatal(err)
	}
	resolved, err := st.FlagRun(ctx, f.ids[3], ops, "wrong_hardware", "the page says an A100")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ResolveFlag(ctx, f.ids[3], resolved.ID, ops, "checked: an H100"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.FlagRun(ctx, f.ids[3], alice, "other", "a second look"); err != nil {
		t.Fatal(err)
	}
	if err := st.PutFit(ctx, store.StoredFit{RunID: f.ids[0], Method: fitMethod, Params: []byte{1, 2, 3}, Summary: []byte{4, 5}}); err != nil {
		t.Fatal(err)
	}
	if err := st.PutFit(ctx, store.StoredFit{RunID: f.ids[4], Method: fitMethod, Refusal: "too few cells"}); err != nil {
		t.Fatal(err)
	}
	f.fitRuns = []string{f.ids[0], f.ids[4]}
	if err := st.MarkSeeded(ctx); err != nil {
		t.Fatal(err)
	}
	f.visible = slices.DeleteFunc(slices.Clone(f.ids), func(id string) bool { return id == f.ids[5] })
	return f
}

// TestCopyKeepsEverything copies a database holding a row in every table
// from SQLite to PostgreSQL (SQLite again without MATRIXD_TEST_POSTGRES)
// and back to SQLite: each table arrives whole, and the history, flags,
// signatures, keys, fits and idempotency records read back the same. A
// flag written after the copy gets a new id and joins the copied history.
// A second copy adds nothing.
func TestCopyKeepsEverything(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src, err := store.Open(ctx, filepath.Join(dir, "src.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	f := buildCopyFixture(t, src)

	middle := filepath.Join(dir, "middle.db")
	if pg := os.Getenv("MATRIXD_TEST_POSTGRES"); pg != "" {
		middle = storetest.PostgresSchema(t, pg)
	}
	mid, err := store.Open(ctx, middle, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer mid.Close()
	back, err := store.Open(ctx, filepath.Join(dir, "back.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()

	for _, hop := range []struct {
		name     string
		from, to *store.Store
	}{{"to " + store.Redact(middle), src, mid}, {"back", mid, back}} {
		res, err := hop.from.CopyTo(ctx, hop.to)
		if err != nil {
			t.Fatalf("copy %s: %v", hop.name, err)
		}
		if len(res.Tables) != len(store.CopiedTables()) {
			t.Errorf("copy %s reports %d tables, want %d", hop.name, len(res.Tables), len(store.CopiedTables()))
		}
		for _, tc := range res.Tables {
			if tc.Source == 0 {
				t.Errorf("the fixture has no %s: the test does not cover it", tc.Name)
			}
			if !tc.Complete() || tc.After != tc.Source {
				t.Errorf("copy %s: %s: source %d rows, destination %d", hop.name, tc, tc.Source, tc.After)
			}
			// The destination made its own cursor secret when it was opened.
			wantSkipped := 0
			if tc.Name == "secrets" {
				wantSkipped = 1
			}
			if tc.Skipped != wantSkipped || tc.Copied != tc.Source-wantSkipped {
				t.Errorf("copy %s into a new database: %s, want %d copied, %d skipped", hop.name, tc, tc.Source-wantSkipped, wantSkipped)
			}
		}
	}

	for _, other := range []*store.Store{mid, back} {
		sameContents(t, src, other, f)
	}

	// A write after the copy: PostgreSQL's id sequences must have moved
	// past the copied flags and events.
	before, err := historyOf(ctx, mid, f.ids[4])
	if err != nil {
		t.Fatal(err)
	}
	flag, err := mid.FlagRun(ctx, f.ids[4], store.Key{Name: "alice"}, "duplicate", "the same grid as another run")
	if err != nil {
		t.Fatalf("flag a copied run: %v", err)
	}
	flags, err := src.Flags(ctx, f.ids[3])
	if err != nil {
		t.Fatal(err)
	}
	if flag.ID <= flags[len(flags)-1].ID {
		t.Errorf("a new flag got id %d, not past the copied ones (up to %d)", flag.ID, flags[len(flags)-1].ID)
	}
	after, err := historyOf(ctx, mid, f.ids[4])
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before)+1 || !reflect.DeepEqual(after[:len(before)], before) || after[len(before)].Action != store.ActionFlag {
		t.Errorf("history after flagging a copied run: %+v, want the copied %+v and the flag", after, before)
	}

	// Again: everything is held already.
	res, err := src.CopyTo(ctx, back)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range res.Tables {
		if tc.Copied != 0 || tc.Skipped != tc.Source || !tc.Complete() {
			t.Errorf("second copy: %s (source %d), want nothing copied", tc, tc.Source)
		}
	}
}

// sameContents checks that b holds what the fixture put in a.
func sameContents(t *testing.T, a, b *store.Store, f copyFixture) {
	t.Helper()
	ctx := context.Background()
	for _, id := range f.ids {
		want, err := historyOf(ctx, a, id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := historyOf(ctx, b, id)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("history of run %s: %+v, %v; want %+v", id, got, err, want)
		}
		wantFlags, err := a.Flags(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		gotFlags, err := b.Flags(ctx, id)
		if err != nil || !reflect.DeepEqual(gotFlags, wantFlags) {
			t.Errorf("flags of run %s: %+v, %v; want %+v", id, gotFlags, err, wantFlags)
		}
	}
	for _, id := range f.visible {
		want, err := a.Run(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := b.Run(ctx, id)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("run %s differs after the copy (%v)", id, err)
		}
	}
	if _, err := b.Run(ctx, f.ids[5]); err == nil {
		t.Errorf("hidden run %s is visible after the copy", f.ids[5])
	}
	for _, id := range f.signed {
		src, prov, err := b.RunSource(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		sig, err := base64.StdEncoding.DecodeString(prov.Signature)
		if err != nil {
			t.Fatal(err)
		}
		if prov.SignedBy != f.fp {
			t.Errorf("run %s signed by %q after the copy, want %s", id, prov.SignedBy, f.fp)
		}
		if err := b.VerifySignature(ctx, "alice", prov.SignedBy, src.Data, sig); err != nil {
			t.Errorf("run %s no longer verifies against alice's signing key: %v", id, err)
		}
	}
	wantKeys, err := a.SigningKeys(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.SigningKeys(ctx, "alice"); err != nil || !reflect.DeepEqual(got, wantKeys) {
		t.Errorf("alice's signing keys: %+v, %v; want %+v", got, err, wantKeys)
	}
	wantAPI, err := a.Keys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.Keys(ctx); err != nil || !reflect.DeepEqual(got, wantAPI) {
		t.Errorf("API keys: %+v, %v; want %+v", got, err, wantAPI)
	}
	for _, id := range f.fitRuns {
		want, _, err := a.Fit(ctx, id, fitMethod)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok, err := b.Fit(ctx, id, fitMethod); err != nil || !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("fit of run %s: %+v, %v, %v; want %+v", id, got, ok, err, want)
		}
	}
	if seeded, err := b.Seeded(ctx); err != nil || !seeded {
		t.Errorf("the copy is not marked seeded (%v): a server would seed it again", err)
	}
	for _, id := range f.visible {
		idem := f.idem[id]
		got, res, err := b.SubmitRun(ctx, f.runs[id], &idem)
		if err != nil || !res.Replayed || got.ID != id {
			t.Errorf("replay of %s's Idempotency-Key %s: %s, %+v, %v; want a replay", id, idem.Key, got.ID, res, err)
		}
	}
}

// TestCopyMergesHistories: a destination with a history of its own holds
// other flags and events under the source's ids; the source's are added
// under new ids (events naming a renumbered flag name its new id), the
// destination's stay as they were, and a second copy adds nothing.
func TestCopyMergesHistories(t *testing.T) {
	ctx := context.Background()
	ops := store.Key{Name: "ops", Admin: true}
	forEachBackend(t, func(t *testing.T, backend string) {
		src, _ := openTestDB(t)
		theirs, _, err := src.CreateRuns(ctx, storetest.Runs(1, 2))
		if err != nil {
			t.Fatal(err)
		}
		flag, err := src.FlagRun(ctx, theirs[0].ID, ops, "spam", "an advert")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := src.ResolveFlag(ctx, theirs[0].ID, flag.ID, ops, "not an advert"); err != nil {
			t.Fatal(err)
		}
		dst := openStore(t, backend, store.Options{})
		own, _, err := dst.CreateRuns(ctx, storetest.Runs(2, 3))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dst.FlagRun(ctx, own[0].ID, ops, "duplicate", "the same grid as another"); err != nil {
			t.Fatal(err)
		}
		ownHistory := map[string][]store.Event{}
		for _, r := range own {
			if ownHistory[r.ID], err = historyOf(ctx, dst, r.ID); err != nil {
				t.Fatal(err)
			}
		}

		res, err := src.CopyTo(ctx, dst)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range res.Tables {
			if !tc.Complete() {
				t.Errorf("%s: source %d, destination %d before, %d after", tc, tc.Source, tc.Before, tc.After)
			}
			want := map[string]int{"run_events": 4, "run_flags": 1}[tc.Name]
			if tc.Renumbered != want {
				t.Errorf("%s: %d under new ids, want %d", tc, tc.Renumbered, want)
			}
		}
		for _, r := range own {
			if got, err := historyOf(ctx, dst, r.ID); err != nil || !reflect.DeepEqual(got, ownHistory[r.ID]) {
				t.Errorf("the destination's own history of %s changed: %+v, %v", r.ID, got, err)
			}
		}
		copied, err := dst.Flags(ctx, theirs[0].ID)
		if err != nil || len(copied) != 1 || copied[0].ID == flag.ID || copied[0].Resolution != "not an advert" {
			t.Fatalf("the copied flag: %+v, %v; want the resolved flag under a new id", copied, err)
		}
		for _, r := range theirs {
			want, err := historyOf(ctx, src, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			got, err := historyOf(ctx, dst, r.ID)
			if err != nil || len(got) != len(want) {
				t.Fatalf("history of %s: %+v, %v; want %+v", r.ID, got, err, want)
			}
			for i := range want {
				g, w := got[i], want[i]
				if g.At != w.At || g.Action != w.Action || g.KeyName != w.KeyName {
					t.Errorf("history of %s, event %d: %+v, want %+v", r.ID, i, g, w)
				}
				if g.Action == store.ActionFlag || g.Action == store.ActionResolve {
					if wantDetail := strings.Replace(string(w.Detail), fmt.Sprintf(`"flag_id":%d`, flag.ID), fmt.Sprintf(`"flag_id":%d`, copied[0].ID), 1); string(g.Detail) != wantDetail {
						t.Errorf("history of %s, event %d: detail %s, want %s", r.ID, i, g.Detail, wantDetail)
					}
				} else if string(g.Detail) != string(w.Detail) {
					t.Errorf("history of %s, event %d: detail %s, want %s", r.ID, i, g.Detail, w.Detail)
				}
			}
		}

		again, err := src.CopyTo(ctx, dst)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range again.Tables {
			if tc.Copied != 0 || !tc.Complete() {
				t.Errorf("second copy: %s (source %d, destination %d before, %d after), want nothing copied", tc, tc.Source, tc.Before, tc.After)
			}
		}
	})
}

// TestCopyRefusesKeysTakenInTheDestination: a signing key or an API key
// name the destination gave to someone else stops the copy, naming it,
// rather than hand the source's signed or submitted runs to another key.
func TestCopyRefusesKeysTakenInTheDestination(t *testing.T) {
	ctx := context.Background()
	priv := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	pub := priv.Public().(ed25519.PublicKey)
	forEachBackend(t, func(t *testing.T, backend string) {
		for _, tc := range []struct {
			name string
			dst  func(st *store.Store) error
			want string
		}{
			{"signing key", func(st *store.Store) error {
				_, _, err := registerSigningKey(ctx, st, "mallory", priv)
				return err
			}, "signing_keys fingerprint " + store.Fingerprint(pub) + ": the destination holds another row in its place"},
			{"API key name", func(st *store.Store) error {
				_, _, err := st.CreateKey(ctx, "alice", true)
				return err
			}, "api_keys id "},
		} {
			t.Run(tc.name, func(t *testing.T) {
				src, _ := openTestDB(t)
				if _, _, err := src.CreateKey(ctx, "alice", false); err != nil {
					t.Fatal(err)
				}
				if _, _, err := registerSigningKey(ctx, src, "alice", priv); err != nil {
					t.Fatal(err)
				}
				dst := openStore(t, backend, store.Options{})
				if err := tc.dst(dst); err != nil {
					t.Fatal(err)
				}
				if _, err := src.CopyTo(ctx, dst); err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("copy: %v, want an error with %q", err, tc.want)
				}
			})
		}
	})
}

// historyOf reads st's whole history of run id.
func historyOf(ctx context.Context, st *store.Store, id string) ([]store.Event, error) {
	var all []store.Event
	cursor := ""
	for {
		page, next, err := st.History(ctx, id, 200, cursor)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if next == "" {
			return all, nil
		}
		cursor = next
	}
}

// registerSigningKey registers priv's public key to the API key keyName.
func registerSigningKey(ctx context.Context, st *store.Store, keyName string, priv ed25519.PrivateKey) (store.SigningKey, bool, error) {
	return st.RegisterSigningKey(ctx, keyName, priv.Public().(ed25519.PublicKey), store.SignProof(keyName, priv))
}

// TestCopyTableComplete: the counts copy checks after each table.
func TestCopyTableComplete(t *testing.T) {
	for _, tc := range []struct {
		name string
		t    store.CopyTable
		want bool
	}{
		{"all copied into an empty table", store.CopyTable{Copied: 5, Source: 5, After: 5}, true},
		{"an empty table", store.CopyTable{}, true},
		{"a row lost", store.CopyTable{Copied: 5, Source: 5, After: 4}, false},
		{"a row never read", store.CopyTable{Copied: 4, Source: 5, After: 4}, false},
		{"skipped into an empty table", store.CopyTable{Copied: 4, Skipped: 1, Source: 5, After: 4}, false},
		{"held already", store.CopyTable{Copied: 2, Skipped: 3, Source: 5, Before: 3, After: 5}, true},
		{"held already, more rows there", store.CopyTable{Copied: 2, Skipped: 3, Source: 5, Before: 7, After: 9}, true},
		{"the source grew meanwhile", store.CopyTable{Copied: 5, Source: 6, Before: 1, After: 6}, false},
	} {
		if got := tc.t.Complete(); got != tc.want {
			t.Errorf("%s: Complete() = %v, want %v", tc.name, got, tc.want)
		}
	}
}
