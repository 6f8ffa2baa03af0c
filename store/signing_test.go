package store_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"math/big"
	"slices"
	"strings"
	"testing"

	"github.com/matrixd/matrixd/store"
	"github.com/matrixd/matrixd/store/storetest"
)

// identityForgery is the signature R = identity, S = 0: with the identity
// as public key it verifies over any message under crypto/ed25519 alone.
func identityForgery() []byte {
	sig := make([]byte, ed25519.SignatureSize)
	sig[0] = 1
	return sig
}

// TestCheckPublicKey: only canonically encoded points of full order are
// keys; every small-order point, a non-canonical encoding, bytes off the
// curve and a wrong length are refused, each saying why.
func TestCheckPublicKey(t *testing.T) {
	small := storetest.SmallOrderKeys()
	if got := base64.StdEncoding.EncodeToString(small[0]); got != "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=" {
		t.Fatalf("the first small-order key is %s, want the identity", got)
	}
	distinct := map[string]bool{}
	for _, k := range small {
		distinct[string(k)] = true
	}
	if len(distinct) != 8 {
		t.Fatalf("%d distinct small-order points, want 8", len(distinct))
	}
	nonCanonical, canonical := storetest.NonCanonicalKey()
	negZero := append([]byte{}, small[0]...)
	negZero[31] |= 0x80 // the identity with the sign bit of x set
	type tc struct {
		name string
		key  []byte
		want string // "" for a good key
	}
	tests := []tc{
		{"a generated key", ed25519.NewKeyFromSeed(bytes.Repeat([]byte{3}, 32)).Public().(ed25519.PublicKey), ""},
		{"full order, canonical", canonical, ""},
		{"y at or above p", nonCanonical, "not canonically encoded"},
		{"negative zero", negZero, "not canonically encoded"},
		{"off the curve", storetest.OffCurveKey(), "not a point of the Ed25519 curve"},
		{"31 bytes", make([]byte, 31), "is 31 bytes"},
	}
	for i, k := range small {
		tests = append(tests, tc{"small order " + string(rune('0'+i)), k, "small order"})
	}
	for _, tt := range tests {
		err := store.CheckPublicKey(tt.key)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v, want accepted", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s (%x): %v, want %q", tt.name, tt.key, err, tt.want)
		}
	}
}

// TestVerifyEd25519: the checked path refuses what crypto/ed25519 alone
// takes (the identity key's forgery) and non-canonical signatures (S ≥ L).
func TestVerifyEd25519(t *testing.T) {
	identity := ed25519.PublicKey(storetest.SmallOrderKeys()[0])
	for _, msg := range []string{"", "any body at all", `{"gpu":"H100"}`} {
		if !ed25519.Verify(identity, []byte(msg), identityForgery()) {
			t.Fatalf("crypto/ed25519 alone refuses the identity forgery over %q; the test no longer shows the hole", msg)
		}
		if store.VerifyEd25519(identity, []byte(msg), identityForgery()) {
			t.Errorf("the identity forgery verifies over %q", msg)
		}
	}

	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{5}, 32))
	pub := priv.Public().(ed25519.PublicKey)
	msg := []byte("a run")
	sig := ed25519.Sign(priv, msg)
	if !store.VerifyEd25519(pub, msg, sig) {
		t.Fatal("a good signature does not verify")
	}
	// S + L: the same scalar mod L, encoded non-canonically.
	l, _ := new(big.Int).SetString("7237005577332262213973186563042994240857116359379907606001950938285454250989", 10)
	le := func(b []byte) []byte { c := slices.Clone(b); slices.Reverse(c); return c }
	s := new(big.Int).SetBytes(le(sig[32:]))
	s.Add(s, l)
	forged := append(slices.Clone(sig[:32]), le(s.FillBytes(make([]byte, 32)))...)
	if store.VerifyEd25519(pub, msg, forged) {
		t.Error("a signature with S ≥ L verifies")
	}
}

// TestSigningKeyStatement: the statement's exact bytes, as the docs give
// them, and a proof SignProof makes verifies over them.
func TestSigningKeyStatement(t *testing.T) {
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, 32))
	pub := priv.Public().(ed25519.PublicKey)
	want := "matrixd signing key v1\napi_key: alice\npublic_key: " + base64.StdEncoding.EncodeToString(pub) + "\n"
	if got := string(store.SigningKeyStatement("alice", pub)); got != want {
		t.Fatalf("statement %q, want %q", got, want)
	}
	proof, err := base64.StdEncoding.DecodeString(store.SignProof("alice", priv))
	if err != nil || !store.VerifyEd25519(pub, []byte(want), proof) {
		t.Fatalf("SignProof's proof does not verify over the statement: %v", err)
	}
}
