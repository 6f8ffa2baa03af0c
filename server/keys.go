package server

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/matrixd/matrixd/api"
	"github.com/matrixd/matrixd/store"
)

func toAPISigningKey(k store.SigningKey) (api.SigningKey, error) {
	der, err := x509.MarshalPKIXPublicKey(k.PublicKey)
	if err != nil {
		return api.SigningKey{}, err
	}
	return api.SigningKey{Fingerprint: k.Fingerprint, KeyName: k.KeyName, CreatedAt: k.CreatedAt,
		PublicKey:    base64.StdEncoding.EncodeToString(k.PublicKey),
		PublicKeyPem: string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))}, nil
}

// parsePublicKey reads an Ed25519 public key: base64 of its 32 raw bytes,
// or a PEM PUBLIC KEY.
func parsePublicKey(v string) (ed25519.PublicKey, error) {
	v = strings.TrimSpace(v)
	if strings.HasPrefix(v, "-----BEGIN") {
		block, _ := pem.Decode([]byte(v))
		if block == nil || block.Type != "PUBLIC KEY" {
			return nil, errors.New("not a PEM PUBLIC KEY block")
		}
		k, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, errors.New("the PEM block is not a public key")
		}
		pub, ok := k.(ed25519.PublicKey)
		if !ok {
			return nil, errors.New("not an Ed25519 key (make one with openssl genpkey -algorithm ed25519)")
		}
		return pub, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(v); err == nil {
			if len(b) != ed25519.PublicKeySize {
				return nil, fmt.Errorf("decodes to %d bytes; an Ed25519 public key is 32", len(b))
			}
			return ed25519.PublicKey(b), nil
		}
	}
	return nil, errors.New("want the base64 of the 32 raw key bytes, or a PEM PUBLIC KEY")
}

// RegisterSigningKey implements POST /v1/signing-keys.
func (s *Server) RegisterSigningKey(ctx context.Context, req api.RegisterSigningKeyRequestObject) (api.RegisterSigningKeyResponseObject, error) {
	pub, err := parsePublicKey(req.Body.PublicKey)
	if err != nil {
		return nil, invalidParam("public_key", err.Error())
	}
	k, created, err := s.store.RegisterSigningKey(ctx, keyOf(ctx).Name, pub, req.Body.Proof)
	if err != nil {
		return nil, err
	}
	out, err := toAPISigningKey(k)
	if err != nil {
		return nil, err
	}
	if created {
		return api.RegisterSigningKey201JSONResponse(out), nil
	}
	return api.RegisterSigningKey200JSONResponse(out), nil
}

// GetSigningKey implements GET /v1/signing-keys/{fingerprint}.
func (s *Server) GetSigningKey(ctx context.Context, req api.GetSigningKeyRequestObject) (api.GetSigningKeyResponseObject, error) {
	k, err := s.store.SigningKey(ctx, req.Fingerprint)
	if err != nil {
		return nil, err
	}
	out, err := toAPISigningKey(k)
	if err != nil {
		return nil, err
	}
	return api.GetSigningKey200JSONResponse(out), nil
}

// RegisterSigningKey implements POST /v1/signing-keys.
func (r rawBodies) RegisterSigningKey(c echo.Context) error {
	var body api.RegisterSigningKeyJSONRequestBody
	if err := strictJSON(c, &body); err != nil {
		return err
	}
	resp, err := r.ssi.RegisterSigningKey(c.Request().Context(), api.RegisterSigningKeyRequestObject{Body: &body})
	if err != nil {
		return err
	}
	return resp.VisitRegisterSigningKeyResponse(c.Response())
}
