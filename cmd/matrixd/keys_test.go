package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

func TestKeysCreateListRevoke(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "matrixd.db")
	cli := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(ctx, append([]string{"keys"}, args...), env(nil), nil, &out, io.Discard)
		return out.String(), err
	}
	out, err := cli("create", "--db", db, "--name", "ci-bot")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	token := lines[len(lines)-1]
	if !strings.HasPrefix(token, "mxd_") || strings.ContainsAny(token, " \t") {
		t.Fatalf("last line %q is not the key alone", token)
	}
	if _, err := cli("create", "--db", db, "--name", "ci-bot"); err == nil || !strings.Contains(err.Error(), "exists already") {
		t.Errorf("a second key of the same name: %v, want a refusal", err)
	}
	if _, err := cli("create", "--db", db, "--name", "bad name!"); err == nil {
		t.Error("a key name with a space and ! was accepted")
	}

	st, err := store.Open(ctx, db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	k, err := st.Authenticate(ctx, token)
	if err != nil || k.Name != "ci-bot" || k.Admin {
		t.Fatalf("the printed key authenticates as %+v, %v; want ci-bot, not admin", k, err)
	}
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	sk, _, err := st.RegisterSigningKey(ctx, "ci-bot", priv.Public().(ed25519.PublicKey), store.SignProof("ci-bot", priv))
	st.Close()
	if err != nil {
		t.Fatal(err)
	}

	list, err := cli("list", "--db", db)
	if err != nil || !strings.Contains(list, "ci-bot") || strings.Contains(list, token) || strings.Contains(list, token[len(token)-52:]) {
		t.Fatalf("list = %q, %v; want the name and never the secret", list, err)
	}
	if !strings.Contains(list, sk.Fingerprint) || strings.Contains(list, "(weak)") {
		t.Errorf("list = %q; want the signing key's fingerprint %s, not weak", list, sk.Fingerprint)
	}
	// An older matrixd stored the identity as a signing key.
	identity := storetest.SmallOrderKeys()[0]
	raw, err := sql.Open("sqlite", "file:"+db)
	if err != nil {
		t.Fatal(err)
	}
	_, err = raw.Exec("INSERT INTO signing_keys (fingerprint, key_name, public_key, created_at) VALUES (?, ?, ?, ?)",
		store.Fingerprint(identity), "ci-bot", identity, "2026-01-01T00:00:00.000000Z")
	raw.Close()
	if err != nil {
		t.Fatal(err)
	}
	if list, err = cli("list", "--db", db); err != nil || !strings.Contains(list, store.Fingerprint(identity)+"(weak)") || strings.Contains(list, sk.Fingerprint+"(weak)") {
		t.Errorf("list = %q, %v; want the stored identity key marked (weak), and only it", list, err)
	}
	if _, err := cli("revoke", "--db", db, "ci-bot"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli("revoke", "--db", db, "nobody"); err == nil || !strings.Contains(err.Error(), "no key is named nobody") {
		t.Errorf("revoke of an unknown key: %v", err)
	}
	st, err = store.Open(ctx, db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Authenticate(ctx, token); !errors.Is(err, store.ErrUnauthorized) {
		t.Errorf("a revoked key authenticates: %v", err)
	}
	if list, _ := cli("list", "--db", db); !strings.Contains(list, "ci-bot") || strings.Count(list, "\n") != 2 {
		t.Errorf("list after revoke = %q", list)
	}
}

func TestImportToolFormat(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "matrixd.db")
	dir := filepath.Join("..", "..", "ingest", "testdata", "tools")
	var out, errOut bytes.Buffer
	err := run(ctx, []string{"import", "--db", db, "--format", "llama-batched-bench", "--meta", filepath.Join(dir, "llama-pr16894.META.json"),
		filepath.Join(dir, "llama-pr16894-qwen2-7b.md")}, env(nil), nil, &out, &errOut)
	if err != nil || !strings.Contains(out.String(), "stored") || !strings.Contains(out.String(), "(6 decode, 2 prefill cells)") {
		t.Fatalf("import = %v, %q; want one run of 6 decode and 2 prefill cells", err, out.String())
	}
	// Several TG for one cell without --tg is refused; --tg picks one.
	multi := filepath.Join(dir, "llama-readme-multi-tg.md")
	meta := filepath.Join(dir, "llama-pr16894.META.json")
	err = run(ctx, []string{"import", "--db", db, "--format", "llama-batched-bench", "--meta", meta, multi}, env(nil), nil, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--tg N") {
		t.Errorf("several TG without --tg: %v", err)
	}
	out.Reset()
	err = run(ctx, []string{"import", "--db", db, "--format", "llama-batched-bench", "--tg", "256", "--meta", meta, multi}, env(nil), nil, &out, io.Discard)
	if err != nil || !strings.Contains(out.String(), "(6 decode, 1 prefill cells)") {
		t.Errorf("--tg 256: %v, %q; want the 6 rows of TG 256", err, out.String())
	}
	if err := run(ctx, []string{"import", "--db", db, "--format", "vllm-bench", filepath.Join(dir, "vllm-sweep-opt125m-c2.json")}, env(nil), nil, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "--meta") {
		t.Errorf("no --meta: %v", err)
	}
}

// TestKeysProof: keys proof prints a registration body whose proof
// verifies over the statement for the name given, and that the store
// accepts for that name only.
func TestKeysProof(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{11}, ed25519.SeedSize))
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "signing.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	cli := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(ctx, append([]string{"keys", "proof"}, args...), env(nil), nil, &out, io.Discard)
		return out.String(), err
	}
	out, err := cli("--name", "ci-bot", "--key", file)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		PublicKey string `json:"public_key"`
		Proof     string `json:"proof"`
	}
	if err := json.Unmarshal([]byte(out), &body); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	pub := priv.Public().(ed25519.PublicKey)
	if body.PublicKey != base64.StdEncoding.EncodeToString(pub) {
		t.Errorf("public_key %s, want the key's", body.PublicKey)
	}
	sig, _ := base64.StdEncoding.DecodeString(body.Proof)
	if !store.VerifyEd25519(pub, store.SigningKeyStatement("ci-bot", pub), sig) {
		t.Errorf("the proof %s does not verify over the statement for ci-bot", body.Proof)
	}
	st, err := store.Open(ctx, filepath.Join(dir, "matrixd.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, _, err := st.RegisterSigningKey(ctx, "other", pub, body.Proof); err == nil {
		t.Error("another API key registered the key with ci-bot's proof")
	}
	if _, created, err := st.RegisterSigningKey(ctx, "ci-bot", pub, body.Proof); err != nil || !created {
		t.Errorf("ci-bot registering with the printed proof: %v, %v", created, err)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--name", "ci-bot"}, "--name and --key are required"},
		{[]string{"--name", "bad name!", "--key", file}, "cannot name an API key"},
		{[]string{"--name", "ci-bot", "--key", filepath.Join(dir, "missing.pem")}, "no such file"},
		{[]string{"--name", "ci-bot", "--key", filepath.Join(dir, "matrixd.db")}, "no PEM PRIVATE KEY"},
	} {
		if _, err := cli(tt.args...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("keys proof %v: %v, want %q", tt.args, err, tt.want)
		}
	}
}
