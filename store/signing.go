package store

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"filippo.io/edwards25519"
)

// SigningKeyStatement is the exact bytes a registration's proof signs: it
// binds the public key to the API key registering it. API key names are
// unique and never reused, so a proof made for one API key is refused for
// every other.
func SigningKeyStatement(keyName string, pub ed25519.PublicKey) []byte {
	return []byte("matrixd signing key v1\napi_key: " + keyName + "\npublic_key: " + base64.StdEncoding.EncodeToString(pub) + "\n")
}

// SignProof returns the proof of possession the API key named keyName
// sends to register priv's public key: the base64 of priv's signature over
// SigningKeyStatement.
func SignProof(keyName string, priv ed25519.PrivateKey) string {
	pub := priv.Public().(ed25519.PublicKey)
	return base64.StdEncoding.EncodeToString(ed25519.Sign(priv, SigningKeyStatement(keyName, pub)))
}

// CheckPublicKey says why pub cannot sign anything, or nil: it must be 32
// bytes that decode to a point of the curve, encoded canonically, and not
// of small order (over the identity, for one, a fixed signature verifies
// for every message). The errors read after the key's name.
func CheckPublicKey(pub ed25519.PublicKey) error {
	if len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("is %d bytes; an Ed25519 public key is 32", len(pub))
	}
	p, err := new(edwards25519.Point).SetBytes(pub)
	if err != nil {
		return errors.New("is not a point of the Ed25519 curve, so no private key has it; make a key pair with openssl genpkey -algorithm ed25519")
	}
	// SetBytes takes non-canonical encodings (y ≥ 2^255−19, a negative
	// zero): the same point under two names.
	if !bytes.Equal(p.Bytes(), pub) {
		return errors.New("is not canonically encoded (a coordinate at or above 2^255−19, or a negative zero); send the key's canonical 32 bytes, as openssl and crypto/ed25519 write them")
	}
	if new(edwards25519.Point).MultByCofactor(p).Equal(edwards25519.NewIdentityPoint()) == 1 {
		return errors.New("is a point of small order (one of the 8 whose multiple by 8 is the identity), over which a signature can verify for any message; make a key pair with openssl genpkey -algorithm ed25519")
	}
	return nil
}

// VerifyEd25519 reports whether sig is pub's pure Ed25519 signature over
// msg, pub being a key CheckPublicKey accepts. Every verification goes
// through it. Signatures whose S is not below the group order are
// refused (crypto/ed25519 checks it).
func VerifyEd25519(pub ed25519.PublicKey, msg, sig []byte) bool {
	return CheckPublicKey(pub) == nil && ed25519.VerifyWithOptions(pub, msg, sig, &ed25519.Options{}) == nil
}

// checkProof verifies a registration's proof: proof (base64) must be
// pub's signature over SigningKeyStatement(keyName, pub).
func checkProof(keyName string, pub ed25519.PublicKey, proof string) error {
	statement := SigningKeyStatement(keyName, pub)
	how := fmt.Sprintf("sign these exact bytes, %q (UTF-8, each \\n one line feed), with the private key of public_key, and send the base64 of the 64-byte Ed25519 signature (openssl pkeyutl -sign -rawin, or ed25519.Sign in Go)", statement)
	sig, ok := decodeBase64(proof)
	switch {
	case strings.TrimSpace(proof) == "":
		return &FieldError{Field: "proof", Message: "is required: " + how}
	case !ok || len(sig) != ed25519.SignatureSize:
		return &FieldError{Field: "proof", Message: "is not the base64 of a 64-byte Ed25519 signature: " + how}
	case !VerifyEd25519(pub, statement, sig):
		return &FieldError{Field: "proof", Message: "does not verify with public_key over the statement for API key " + keyName + ": " + how}
	}
	return nil
}

// decodeBase64 reads RFC 4648 base64, padded or not.
func decodeBase64(v string) ([]byte, bool) {
	v = strings.TrimSpace(v)
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		b, err = base64.RawStdEncoding.DecodeString(v)
	}
	return b, err == nil
}
