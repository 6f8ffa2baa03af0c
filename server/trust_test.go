package server_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/ingest"
	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func decodeJSON[T any](t testing.TB, body []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	return v
}

// TestProvenance: every way a run arrives keeps its exact bytes, served
// at /source with their hash in the run; identical bytes are kept once.
func TestProvenance(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "alice")

	t.Run("seeds keep their pages", func(t *testing.T) {
		for _, s := range ingest.Seeds() {
			id := e.seed(t, s.Name).ID
			r := decodeRun(t, e.do(t, "GET", "/v1/runs/"+id, nil).Body.Bytes())
			p := r.Provenance
			if p.SourceSha256 == nil || *p.SourceSha256 != sha(s.Data) || *p.SourceFormat != "page" || *p.SourceSize != int64(len(s.Data)) {
				t.Fatalf("seed %s provenance %+v, want the page's hash %s", s.Name, p, sha(s.Data))
			}
			rec := e.do(t, "GET", *p.SourceURL, nil)
			if rec.Code != 200 || !bytes.Equal(rec.Body.Bytes(), s.Data) || rec.Header().Get("Content-Type") != "text/plain; charset=utf-8" {
				t.Fatalf("source %d %q: not the page's bytes", rec.Code, rec.Header().Get("Content-Type"))
			}
			sum := sha256.Sum256(s.Data)
			if got, want := rec.Header().Get("Repr-Digest"), "sha-256=:"+base64.StdEncoding.EncodeToString(sum[:])+":"; got != want {
				t.Errorf("Repr-Digest %q, want %q", got, want)
			}
		}
	})

	t.Run("run JSON", func(t *testing.T) {
		body := runJSON(t, storetest.Runs(71, 1)[0])
		rec := e.send(t, "POST", "/v1/runs", k["alice"], body)
		if rec.Code != 201 {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
		r := decodeRun(t, rec.Body.Bytes())
		if *r.Provenance.SourceSha256 != sha(body) || *r.Provenance.SourceMediaType != "application/json" || r.Provenance.SignedBy != nil {
			t.Errorf("provenance %+v", r.Provenance)
		}
		if src := e.do(t, "GET", "/v1/runs/"+r.ID+"/source", nil); !bytes.Equal(src.Body.Bytes(), body) {
			t.Errorf("source is not the body sent")
		}
	})

	t.Run("multipart import keeps the whole body", func(t *testing.T) {
		ct, body := multipartBody(t, toolFixture(t, "llama-pr16894.META.json"), "llama-pr16894-qwen2-7b.md")
		rec := e.send(t, "POST", "/v1/runs/import?format=llama-batched-bench", with(k["alice"], "Content-Type", ct), body)
		if rec.Code != 201 {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
		r := decodeRun(t, rec.Body.Bytes())
		if *r.Provenance.SourceSha256 != sha(body) || *r.Provenance.SourceMediaType != ct || *r.Provenance.SourceFormat != "llama-batched-bench" {
			t.Errorf("provenance %+v, want the body's hash and %s", r.Provenance, ct)
		}
		src := e.do(t, "GET", "/v1/runs/"+r.ID+"/source", nil)
		if !bytes.Equal(src.Body.Bytes(), body) || src.Header().Get("Content-Type") != ct {
			t.Errorf("source %q is not the multipart body sent", src.Header().Get("Content-Type"))
		}
	})

	t.Run("identical bytes kept once", func(t *testing.T) {
		seeds := ingest.Seeds()
		before := e.rows(t)["sources"]
		// The seed page again: its run is stored already, nothing is added.
		rec := e.send(t, "POST", "/v1/runs/import", with(k["alice"], "Content-Type", "text/plain"), seeds[0].Data)
		if rec.Code != 200 {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
		if after := e.rows(t)["sources"]; after != before {
			t.Errorf("sources %d → %d after the same page again", before, after)
		}
	})

	t.Run("old runs say the bytes were not kept", func(t *testing.T) {
		if _, _, err := e.st.CreateRuns(t.Context(), storetest.Runs(72, 1)); err != nil {
			t.Fatal(err)
		}
		list := decodeJSON[api.RunList](t, e.do(t, "GET", "/v1/runs?limit=1", nil).Body.Bytes())
		r := decodeRun(t, e.do(t, "GET", "/v1/runs/"+list.Items[0].ID, nil).Body.Bytes())
		if r.Provenance.SourceSha256 != nil || r.Provenance.Note == nil {
			t.Errorf("provenance %+v, want no hash and a note", r.Provenance)
		}
		rec := e.do(t, "GET", "/v1/runs/"+r.ID+"/source", nil)
		if rec.Code != 404 || !strings.Contains(rec.Body.String(), "were not kept") {
			t.Errorf("source of a run without one: %d %s", rec.Code, rec.Body)
		}
	})
}

// TestSignedSubmission: a key registers its Ed25519 public key, a signed
// body is verified and its signature kept, so that anyone can re-verify the
// stored source offline; a bad signature stores nothing.
func TestSignedSubmission(t *testing.T) {
	e := newEnv(t, 0)
	k := e.keys(t, "alice", "bob")
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	reg := registration(pub, store.SignProof("alice", priv))
	rec := e.send(t, "POST", "/v1/signing-keys", k["alice"], reg)
	if rec.Code != 201 {
		t.Fatalf("register: %d %s", rec.Code, rec.Body)
	}
	sk := decodeJSON[api.SigningKey](t, rec.Body.Bytes())
	if want := sha(pub); sk.Fingerprint != want || sk.KeyName != "alice" {
		t.Fatalf("fingerprint %s by %s, want %s by alice", sk.Fingerprint, sk.KeyName, want)
	}
	if rec := e.send(t, "POST", "/v1/signing-keys", k["alice"], reg); rec.Code != 200 {
		t.Errorf("registering again: %d, want 200", rec.Code)
	}
	if rec := e.send(t, "POST", "/v1/signing-keys", k["bob"], reg); rec.Code != 400 {
		t.Errorf("bob registering alice's key with her proof: %d, want 400", rec.Code)
	}
	if rec := e.send(t, "POST", "/v1/signing-keys", k["bob"], registration(pub, store.SignProof("bob", priv))); rec.Code != 409 {
		t.Errorf("bob registering alice's key with its private key: %d, want 409", rec.Code)
	}
	if rec := e.send(t, "POST", "/v1/signing-keys", k["alice"], []byte(`{"public_key":"AAAA"}`)); rec.Code != 400 {
		t.Errorf("a short key: %d, want 400", rec.Code)
	}
	if rec := e.send(t, "POST", "/v1/signing-keys", k["alice"], []byte(`{"publickey":"AAAA"}`)); rec.Code != 400 {
		t.Errorf("a misspelt member: %d, want 400", rec.Code)
	}

	body := runJSON(t, storetest.Runs(81, 1)[0])
	signed := func(h http.Header, sig []byte, fp string) http.Header {
		return with(h, "Body-Signature", "ed25519="+base64.StdEncoding.EncodeToString(sig), "Body-Signature-Key", fp)
	}
	bad := []struct {
		name   string
		h      http.Header
		status int
	}{
		{"signature over other bytes", signed(k["alice"], ed25519.Sign(priv, []byte("other")), sk.Fingerprint), 400},
		{"not a signature", with(k["alice"], "Body-Signature", "ed25519=AAAA", "Body-Signature-Key", sk.Fingerprint), 400},
		{"no key named", with(k["alice"], "Body-Signature", "ed25519="+base64.StdEncoding.EncodeToString(ed25519.Sign(priv, body))), 400},
		{"another API key's signing key", signed(k["bob"], ed25519.Sign(priv, body), sk.Fingerprint), 403},
		{"an unknown signing key", signed(k["alice"], ed25519.Sign(priv, body), strings.Repeat("ab", 32)), 403},
	}
	for _, tt := range bad {
		before := e.rows(t)
		rec := e.send(t, "POST", "/v1/runs", tt.h, body)
		if rec.Code != tt.status {
			t.Errorf("%s: %d, want %d: %s", tt.name, rec.Code, tt.status, rec.Body)
		}
		e.sameRows(t, before)
	}

	sig := ed25519.Sign(priv, body)
	rec = e.send(t, "POST", "/v1/runs", signed(k["alice"], sig, sk.Fingerprint), body)
	if rec.Code != 201 {
		t.Fatalf("signed: %d %s", rec.Code, rec.Body)
	}
	r := decodeRun(t, rec.Body.Bytes())
	if r.Provenance.SignedBy == nil || *r.Provenance.SignedBy != sk.Fingerprint || *r.Provenance.Signature != "ed25519="+base64.StdEncoding.EncodeToString(sig) {
		t.Fatalf("provenance %+v", r.Provenance)
	}
	// Offline: the stored bytes, the stored signature and the public key.
	src := e.do(t, "GET", "/v1/runs/"+r.ID+"/source", nil).Body.Bytes()
	got := decodeJSON[api.SigningKey](t, e.do(t, "GET", "/v1/signing-keys/"+*r.Provenance.SignedBy, nil).Body.Bytes())
	rawPub, _ := base64.StdEncoding.DecodeString(got.PublicKey)
	rawSig, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(*r.Provenance.Signature, "ed25519="))
	if !store.VerifyEd25519(rawPub, src, rawSig) || sha(rawPub) != got.Fingerprint {
		t.Error("the stored signature does not verify over the stored source with the published key")
	}
	if !strings.Contains(got.PublicKeyPem, "BEGIN PUBLIC KEY") {
		t.Errorf("no PEM: %q", got.PublicKeyPem)
	}

	// A signed multipart import: the signature covers the whole body.
	ct, mp := multipartBody(t, toolFixture(t, "llama-pr16894.META.json"), "llama-pr16894-qwen2-7b.md")
	rec = e.send(t, "POST", "/v1/runs/import?format=llama-batched-bench", signed(with(k["alice"], "Content-Type", ct), ed25519.Sign(priv, mp), sk.Fingerprint), mp)
	if rec.Code != 201 || *decodeRun(t, rec.Body.Bytes()).Provenance.SignedBy != sk.Fingerprint {
		t.Fatalf("signed import: %d %.300s", rec.Code, rec.Body)
	}
}

// TestModeration: flags, hiding, restoring, resolving and the history,
// through the real handler on a real database, cached answers included.
func TestModeration(t *testing.T) {
	e := newEnv(t, 3)
	k := e.keys(t, "alice", "bob", "admin-ops")
	fara := e.seed(t, "fara1.5-4b-autoround-rtx3060").ID
	run := "/v1/runs/" + fara
	flag := []byte(`{"reason":"implausible","text":"64 requests at 16K cannot fit 12 GB"}`)

	etag := e.do(t, "GET", run, nil).Header().Get("ETag")
	page := httptest.NewRecorder()
	e.h.ServeHTTP(page, httptest.NewRequest(http.MethodGet, "/runs/"+fara, nil))
	if src := "/v1/runs/" + fara + "/source"; page.Code != 200 || !strings.Contains(page.Body.String(), src) || !strings.Contains(page.Body.String(), e.seed(t, "fara1.5-4b-autoround-rtx3060").Provenance.SourceSHA256) {
		t.Errorf("the run's page does not show its source and hash: %d", page.Code)
	}
	rec := e.send(t, "POST", run+"/flags", k["bob"], flag)
	if rec.Code != 201 {
		t.Fatalf("flag: %d %s", rec.Code, rec.Body)
	}
	f := decodeJSON[api.Flag](t, rec.Body.Bytes())
	before := e.rows(t)
	if rec := e.send(t, "POST", run+"/flags", k["bob"], flag); rec.Code != 409 {
		t.Errorf("second open flag by one key: %d, want 409", rec.Code)
	}
	for _, body := range []string{`{"reason":"wrong","text":"x"}`, `{"reason":"spam","text":""}`, `{"reason":"spam","text":"x","extra":1}`, `not json`} {
		if rec := e.send(t, "POST", run+"/flags", k["alice"], []byte(body)); rec.Code != 400 {
			t.Errorf("flag %s: %d, want 400: %s", body, rec.Code, rec.Body)
		}
	}
	if rec := e.send(t, "POST", run+"/flags", nil, flag); rec.Code != 401 {
		t.Errorf("flag without a key: %d, want 401", rec.Code)
	}
	e.sameRows(t, before)
	rec = e.do(t, "GET", run, http.Header{"If-None-Match": {etag}})
	if rec.Code != 200 || decodeRun(t, rec.Body.Bytes()).Moderation.OpenFlags != 1 {
		t.Fatalf("after a flag the cached run must change: %d %.200s", rec.Code, rec.Body)
	}
	if list := decodeJSON[api.FlagList](t, e.do(t, "GET", run+"/flags", nil).Body.Bytes()); len(list.Items) != 1 || list.Items[0].KeyName != "bob" {
		t.Errorf("flags %+v", list)
	}

	hide := []byte(`{"reason":"the grid contradicts its own TTFT column"}`)
	if rec := e.send(t, "PUT", run+"/hidden", k["alice"], hide); rec.Code != 403 {
		t.Errorf("hide by a non-admin: %d, want 403", rec.Code)
	}
	listBefore := e.do(t, "GET", "/v1/runs", nil).Body.String()
	catalogs := map[string]string{}
	for _, target := range []string{"/v1/engines", "/v1/gpus"} {
		catalogs[target] = e.do(t, "GET", target, nil).Body.String()
	}
	rec = e.send(t, "PUT", run+"/hidden", k["admin-ops"], hide)
	if rec.Code != 200 || !decodeJSON[api.Moderation](t, rec.Body.Bytes()).Hidden {
		t.Fatalf("hide: %d %s", rec.Code, rec.Body)
	}
	if rec := e.send(t, "PUT", run+"/hidden", k["admin-ops"], hide); rec.Code != 409 {
		t.Errorf("hide twice: %d, want 409", rec.Code)
	}
	gone := []string{run, run + "/decode", run + "/prefill", run + "/matrix", run + "/source",
		"/v1/calculator/decode?run_id=" + fara + "&context_tokens=0&concurrency=1",
		"/v1/compare?run_ids=" + fara + "," + e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090").ID}
	for _, target := range gone {
		rec := e.do(t, "GET", target, nil)
		if rec.Code != 410 || !strings.Contains(rec.Body.String(), "contradicts its own TTFT") {
			t.Errorf("%s of a hidden run: %d %.200s, want 410 with the reason", target, rec.Code, rec.Body)
		}
	}
	page = httptest.NewRecorder()
	e.h.ServeHTTP(page, httptest.NewRequest(http.MethodGet, "/runs/"+fara, nil))
	if rec := page; rec.Code != 410 || !strings.Contains(rec.Body.String(), "contradicts its own TTFT") {
		t.Errorf("the run's page: %d, want 410 saying why", rec.Code)
	}
	for _, target := range []string{"/v1/runs?limit=200", "/v1/leaderboard?context_tokens=0&concurrency=1", "/v1/models", "/v1/engines", "/v1/gpus"} {
		if body := e.do(t, "GET", target, nil).Body.String(); strings.Contains(body, fara) || strings.Contains(body, "Fara1.5") || body == catalogs[target] {
			t.Errorf("%s still shows the hidden run", target)
		}
	}
	// Other (generated) runs on the GPU are there, but the hidden run no
	// longer names the model for the facts: 422, not an answer from it.
	if rec := e.do(t, "GET", "/v1/calculator/decode?model=fara&gpu=RTX%203060&context_tokens=0&concurrency=1", nil); rec.Code/100 != 4 ||
		!strings.Contains(rec.Body.String(), `no run of a model matching \"fara\"`) || strings.Contains(rec.Body.String(), fara) {
		t.Errorf("calculator by model and gpu with the only run hidden: %d, want a 4xx saying no run: %s", rec.Code, rec.Body)
	}
	if rec := e.do(t, "GET", run+"/flags", nil); rec.Code != 200 {
		t.Errorf("a hidden run's flags: %d, want 200", rec.Code)
	}
	if rec := e.send(t, "POST", run+"/flags", k["alice"], flag); rec.Code != 410 {
		t.Errorf("flag a hidden run: %d, want 410", rec.Code)
	}

	rec = e.send(t, "POST", run+"/flags/"+strconv.FormatInt(f.ID, 10)+"/resolution", k["admin-ops"], []byte(`{"note":"hidden: the TTFT column disagrees"}`))
	if rec.Code != 200 || decodeJSON[api.Flag](t, rec.Body.Bytes()).ResolvedBy == nil {
		t.Errorf("resolve: %d %s", rec.Code, rec.Body)
	}
	if rec := e.send(t, "POST", run+"/flags/"+strconv.FormatInt(f.ID, 10)+"/resolution", k["admin-ops"], []byte(`{"note":"again"}`)); rec.Code != 409 {
		t.Errorf("resolve twice: %d, want 409", rec.Code)
	}
	if rec := e.send(t, "POST", run+"/flags/"+strconv.FormatInt(f.ID, 10)+"/resolution", k["bob"], []byte(`{"note":"mine"}`)); rec.Code != 403 {
		t.Errorf("resolve by a non-admin: %d, want 403", rec.Code)
	}

	if rec := e.send(t, "DELETE", run+"/hidden", k["admin-ops"], nil); rec.Code != 200 {
		t.Fatalf("restore: %d %s", rec.Code, rec.Body)
	}
	if rec := e.send(t, "DELETE", run+"/hidden", k["admin-ops"], nil); rec.Code != 409 {
		t.Errorf("restore a visible run: %d, want 409", rec.Code)
	}
	// Restoring judges the run against the stored runs (the seeds were
	// stored unjudged): its corroboration status may be all that changed.
	status := regexp.MustCompile(`"corroboration":"[a-z]+"`)
	if got := e.do(t, "GET", "/v1/runs", nil).Body.String(); status.ReplaceAllString(got, "") != status.ReplaceAllString(listBefore, "") {
		t.Errorf("after restoring, the list differs from before hiding")
	}
	for target, want := range catalogs {
		if got := e.do(t, "GET", target, nil).Body.String(); got != want {
			t.Errorf("after restoring, %s differs from before hiding", target)
		}
	}
	if r := decodeRun(t, e.do(t, "GET", run, nil).Body.Bytes()); r.Moderation.OpenFlags != 0 || r.Moderation.Hidden {
		t.Errorf("restored moderation %+v", r.Moderation)
	}

	// Every change is in the history, which outlives the run.
	if rec := e.send(t, "PATCH", run, with(k["admin-ops"], "Content-Type", "application/merge-patch+json"), []byte(`{"notes":"checked"}`)); rec.Code != 200 {
		t.Fatalf("patch: %d", rec.Code)
	}
	if rec := e.send(t, "DELETE", run, k["admin-ops"], nil); rec.Code != 204 {
		t.Fatalf("delete: %d", rec.Code)
	}
	h := decodeJSON[api.RunHistory](t, e.do(t, "GET", run+"/history", nil).Body.Bytes())
	var actions []string
	for _, ev := range h.Items {
		actions = append(actions, string(ev.Action))
	}
	if got, want := strings.Join(actions, " "), "create flag hide resolve restore corroboration update delete"; got != want {
		t.Errorf("history %q, want %q", got, want)
	}
	if last := h.Items[len(h.Items)-1]; last.KeyName == nil || *last.KeyName != "admin-ops" {
		t.Errorf("delete by %v, want admin-ops", last.KeyName)
	}
	if h.Items[6].Detail["notes"] != "checked" || h.Items[2].Detail["reason"] == nil || h.Items[5].Detail["to"] == nil {
		t.Errorf("details %v %v %v", h.Items[6].Detail, h.Items[5].Detail, h.Items[2].Detail)
	}
	if rec := e.do(t, "GET", "/v1/runs/rneverwashere/history", nil); rec.Code != 404 {
		t.Errorf("history of no run: %d, want 404", rec.Code)
	}
}

// TestHistoryPages: a run's 30 events, 10 a page, are three pages whose
// events together are all 30 in order, each once; the default page is 50;
// a cursor not issued for this history, or a limit out of range, is a 400
// problem.
func TestHistoryPages(t *testing.T) {
	e := newEnv(t, 0)
	id := e.seed(t, "fara1.5-4b-autoround-rtx3060").ID
	admin := store.Key{Name: "ops", Admin: true}
	for i := range 29 {
		notes := fmt.Sprintf("note %d", i)
		if _, err := e.st.UpdateRunMeta(context.Background(), id, store.MetaPatch{Notes: &notes}, admin); err != nil {
			t.Fatal(err)
		}
	}
	var (
		got   []api.RunEvent
		pages []string
	)
	target := "/v1/runs/" + id + "/history?limit=10"
	for len(pages) < 4 {
		rec := e.do(t, "GET", target, nil)
		if rec.Code != 200 {
			t.Fatalf("%s: %d %s", target, rec.Code, rec.Body)
		}
		page := decodeJSON[api.RunHistory](t, rec.Body.Bytes())
		got, pages = append(got, page.Items...), append(pages, strconv.Itoa(len(page.Items)))
		if page.NextCursor == nil {
			break
		}
		target = "/v1/runs/" + id + "/history?limit=10&cursor=" + url.QueryEscape(*page.NextCursor)
	}
	if strings.Join(pages, " ") != "10 10 10" {
		t.Fatalf("pages of %s events, want 10 10 10", strings.Join(pages, ", "))
	}
	seen := map[int64]bool{}
	for i, ev := range got {
		if seen[ev.ID] || i > 0 && ev.ID < got[i-1].ID {
			t.Fatalf("event %d (id %d): repeated or out of order", i, ev.ID)
		}
		seen[ev.ID] = true
	}
	if got[0].Action != api.RunEventActionCreate || got[29].Detail["notes"] != "note 28" {
		t.Errorf("first %s, last %v; want the create first and the 29th edit last", got[0].Action, got[29].Detail)
	}
	all := decodeJSON[api.RunHistory](t, e.do(t, "GET", "/v1/runs/"+id+"/history", nil).Body.Bytes())
	if len(all.Items) != 30 || all.NextCursor != nil {
		t.Errorf("default page: %d events, next %v; want all 30 in one page of up to 50", len(all.Items), all.NextCursor)
	}

	first := decodeJSON[api.RunHistory](t, e.do(t, "GET", "/v1/runs/"+id+"/history?limit=1", nil).Body.Bytes())
	for _, q := range []string{
		"cursor=" + url.QueryEscape((*first.NextCursor)[:len(*first.NextCursor)-2]+"xx"),
		"cursor=nonsense",
		"cursor=" + url.QueryEscape(*decodeJSON[api.RunList](t, e.do(t, "GET", "/v1/runs?limit=1", nil).Body.Bytes()).NextCursor),
		"limit=0",
		"limit=201",
	} {
		rec := e.do(t, "GET", "/v1/runs/"+id+"/history?"+q, nil)
		if rec.Code != 400 || rec.Header().Get("Content-Type") != "application/problem+json" {
			t.Errorf("history?%s: %d %s, want a 400 problem", q, rec.Code, rec.Body)
		}
	}
}

// TestSubmitterProfile: a submitter's visible runs, newest first.
func TestSubmitterProfile(t *testing.T) {
	e := newEnv(t, 0)
	rec := e.do(t, "GET", "/v1/submitters/sandberg", nil)
	if rec.Code != 200 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	p := decodeJSON[api.SubmitterProfile](t, rec.Body.Bytes())
	nemo := e.seed(t, "nemotron-nano-12b-v2-awq-rtx3090").ID
	if p.Name != "Sandberg" || p.RunCount != 1 || len(p.Runs) != 1 || p.Runs[0].ID != nemo || p.RunsURL != "/v1/runs?submitter=Sandberg" {
		t.Errorf("profile %+v", p)
	}
	if rec := e.do(t, "GET", p.RunsURL, nil); !strings.Contains(rec.Body.String(), nemo) {
		t.Errorf("runs_url does not list the run")
	}
	if rec := e.do(t, "GET", "/v1/submitters/nobody", nil); rec.Code != 404 {
		t.Errorf("unknown submitter: %d, want 404", rec.Code)
	}
}
