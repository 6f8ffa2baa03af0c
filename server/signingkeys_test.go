package server_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

// registration is a POST /v1/signing-keys body.
func registration(pub []byte, proof string) []byte {
	b, _ := json.Marshal(map[string]string{"public_key": base64.StdEncoding.EncodeToString(pub), "proof": proof})
	return b
}

func newSigningKey(t testing.TB) (ed25519.PublicKey, ed25519.PrivateKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return pub, priv
}

// wantProblem checks a refusal: its status, the field its errors name and
// words of its detail.
func wantProblem(t testing.TB, name string, rec *httptest.ResponseRecorder, status int, field string, words ...string) {
	t.Helper()
	body := rec.Body.Bytes()
	if rec.Code != status {
		t.Errorf("%s: %d, want %d: %s", name, rec.Code, status, body)
		return
	}
	p := decodeJSON[api.Problem](t, body)
	if p.Errors == nil || len(*p.Errors) != 1 || deref((*p.Errors)[0].Field) != field {
		t.Errorf("%s: errors %s, want one naming %s", name, body, field)
	}
	for _, w := range words {
		if p.Detail == nil || !strings.Contains(*p.Detail, w) {
			t.Errorf("%s: detail %s does not say %q", name, body, w)
		}
	}
}

func pemPublicKey(t testing.TB, pub ed25519.PublicKey) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestSigningKeyProof: a registration proves possession of the private key
// for the registering API key. Mallory, holding only alice's public key
// (and a proof alice made), can neither register it before or after alice
// nor post alice's signed body as her own; a refusal quotes the exact
// statement to sign.
func TestSigningKeyProof(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "alice", "mallory")
	pub, priv := newSigningKey(t)
	_, otherPriv := newSigningKey(t)
	statement := strconv.Quote(string(store.SigningKeyStatement("alice", pub)))
	aliceProof := store.SignProof("alice", priv)

	refused := []struct {
		name  string
		key   string
		body  []byte
		words []string
	}{
		{"no proof", "alice", []byte(`{"public_key":"` + base64.StdEncoding.EncodeToString(pub) + `"}`), []string{"proof: is required", statement}},
		{"an empty proof", "alice", registration(pub, ""), []string{"proof: is required", statement}},
		{"a proof that is not base64", "alice", registration(pub, "not base64!"), []string{"not the base64 of a 64-byte", statement}},
		{"a proof made for another API key", "alice", registration(pub, store.SignProof("mallory", priv)), []string{"does not verify", statement}},
		{"a proof by another private key", "alice", registration(pub, base64.StdEncoding.EncodeToString(
			ed25519.Sign(otherPriv, store.SigningKeyStatement("alice", pub)))), []string{"does not verify", statement}},
		{"mallory with alice's proof, before alice", "mallory", registration(pub, aliceProof),
			[]string{"does not verify", strconv.Quote(string(store.SigningKeyStatement("mallory", pub)))}},
	}
	before := e.rows(t)
	for _, tt := range refused {
		rec := e.send(t, "POST", "/v1/signing-keys", k[tt.key], tt.body)
		wantProblem(t, tt.name, rec, 400, "proof", tt.words...)
	}
	e.sameRows(t, before)

	rec := e.send(t, "POST", "/v1/signing-keys", k["alice"], registration(pub, aliceProof))
	if rec.Code != 201 {
		t.Fatalf("alice with her proof: %d %s", rec.Code, rec.Body)
	}
	fp := decodeJSON[api.SigningKey](t, rec.Body.Bytes()).Fingerprint
	// A proof in PEM registration: the statement names the raw base64 all the same.
	pub2, priv2 := newSigningKey(t)
	b, _ := json.Marshal(map[string]string{"public_key": pemPublicKey(t, pub2), "proof": store.SignProof("alice", priv2)})
	if rec := e.send(t, "POST", "/v1/signing-keys", k["alice"], b); rec.Code != 201 {
		t.Errorf("a PEM key with its proof: %d %s", rec.Code, rec.Body)
	}

	rec = e.send(t, "POST", "/v1/signing-keys", k["mallory"], registration(pub, aliceProof))
	wantProblem(t, "mallory with alice's proof, after alice", rec, 400, "proof", "does not verify")

	body := runJSON(t, storetest.Runs(83, 1)[0])
	sig := "ed25519=" + base64.StdEncoding.EncodeToString(ed25519.Sign(priv, body))
	before = e.rows(t)
	rec = e.send(t, "POST", "/v1/runs", with(k["mallory"], "Body-Signature", sig, "Body-Signature-Key", fp), body)
	if rec.Code != 403 {
		t.Errorf("mallory posting alice's signed body: %d, want 403: %s", rec.Code, rec.Body)
	}
	e.sameRows(t, before)
	rec = e.send(t, "POST", "/v1/runs", with(k["alice"], "Body-Signature", sig, "Body-Signature-Key", fp), body)
	if rec.Code != 201 {
		t.Fatalf("alice's signed body: %d %s", rec.Code, rec.Body)
	}
	if r := decodeRun(t, rec.Body.Bytes()); deref(r.Provenance.SignedBy) != fp || deref(r.SubmittedBy) != "alice" {
		t.Errorf("provenance %+v by %s, want signed by %s, submitted by alice", r.Provenance, deref(r.SubmittedBy), fp)
	}
}

// TestWeakSigningKeys: the 8 small-order points, a non-canonical encoding
// and bytes off the curve are refused at registration, before any proof
// is looked at (over the identity a fixed signature verifies for any
// statement); a weak key stored by an older matrixd verifies nothing.
func TestWeakSigningKeys(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "alice")
	forgery := make([]byte, ed25519.SignatureSize)
	forgery[0] = 1 // R = identity, S = 0
	proof := base64.StdEncoding.EncodeToString(forgery)

	type weak struct {
		name string
		key  []byte
		word string
	}
	var keys []weak
	for i, key := range storetest.SmallOrderKeys() {
		keys = append(keys, weak{"small-order point " + strconv.Itoa(i), key, "small order"})
	}
	nonCanonical, _ := storetest.NonCanonicalKey()
	keys = append(keys, weak{"y ≥ p", nonCanonical, "not canonically encoded"}, weak{"off the curve", storetest.OffCurveKey(), "not a point of the Ed25519 curve"})
	before := e.rows(t)
	for _, w := range keys {
		rec := e.send(t, "POST", "/v1/signing-keys", k["alice"], registration(w.key, proof))
		wantProblem(t, w.name, rec, 400, "public_key", w.word, "openssl")
	}
	e.sameRows(t, before)

	// An older matrixd stored the identity key for alice.
	identity := storetest.SmallOrderKeys()[0]
	fp := store.Fingerprint(identity)
	e.exec(t, "INSERT INTO signing_keys (fingerprint, key_name, public_key, created_at) VALUES (?, ?, ?, ?)",
		fp, "alice", identity, "2026-01-01T00:00:00.000000Z")
	body := runJSON(t, storetest.Runs(84, 1)[0])
	if !ed25519.Verify(identity, body, forgery) {
		t.Fatal("crypto/ed25519 alone refuses the forgery; the test no longer shows the hole")
	}
	before = e.rows(t)
	rec := e.send(t, "POST", "/v1/runs", with(k["alice"], "Body-Signature", "ed25519="+proof, "Body-Signature-Key", fp), body)
	wantProblem(t, "a run signed with the stored identity key", rec, 400, "Body-Signature-Key", "small order", "verifies nothing")
	e.sameRows(t, before)
}

// exec runs one statement on the env's database directly, as an older
// matrixd might have written it (? placeholders, numbered for PostgreSQL).
func (e *env) exec(t testing.TB, query string, args ...any) {
	t.Helper()
	driver, dsn := "sqlite", "file:"+e.path
	if store.IsPostgres(e.path) {
		driver, dsn = "pgx", e.path
		for i := 1; strings.Contains(query, "?"); i++ {
			query = strings.Replace(query, "?", "$"+strconv.Itoa(i), 1)
		}
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(query, args...); err != nil {
		t.Fatal(err)
	}
}

// TestSigningKeyExample: openapi.yaml's registration example is a real key
// with a real proof for alice, and registers as its 201 example says.
func TestSigningKeyExample(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "alice")
	op := e.spec.Paths.Find("/v1/signing-keys").Post
	body, err := json.Marshal(op.RequestBody.Value.Content["application/json"].Examples["alice"].Value.Value)
	if err != nil {
		t.Fatal(err)
	}
	want := op.Responses.Value("201").Value.Content["application/json"].Examples["key"].Value.Value.(map[string]any)
	rec := e.send(t, "POST", "/v1/signing-keys", k["alice"], body)
	if rec.Code != 201 {
		t.Fatalf("the spec's example: %d %s", rec.Code, rec.Body)
	}
	got := decodeJSON[api.SigningKey](t, rec.Body.Bytes())
	if got.Fingerprint != want["fingerprint"] || got.PublicKey != want["public_key"] || got.PublicKeyPem != want["public_key_pem"] {
		t.Errorf("registered %+v, want the 201 example %v", got, want)
	}
}
