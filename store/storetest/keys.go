package storetest

import (
	"crypto/ed25519"

	"filippo.io/edwards25519"
)

// smallY is the canonical encoding of the point with y = v and a positive
// x, if one exists.
func smallY(v byte) (*edwards25519.Point, []byte) {
	b := make([]byte, ed25519.PublicKeySize)
	b[0] = v
	p, err := new(edwards25519.Point).SetBytes(b)
	if err != nil {
		return nil, b
	}
	return p, b
}

func isSmallOrder(p *edwards25519.Point) bool {
	return new(edwards25519.Point).MultByCofactor(p).Equal(edwards25519.NewIdentityPoint()) == 1
}

// SmallOrderKeys returns the canonical encodings of the 8 points of order
// dividing 8, the identity first: each a "public key" over which a forged
// signature can verify. They are worked out, not copied: [L]P for a point
// P with a torsion part of order 8 generates them.
func SmallOrderKeys() [][]byte {
	minusOne := edwards25519.NewScalar().Subtract(edwards25519.NewScalar(), scalarOne())
	for v := byte(2); ; v++ {
		p, _ := smallY(v)
		if p == nil {
			continue
		}
		// [L]P = [L−1]P + P: P's component in the torsion subgroup.
		t := new(edwards25519.Point).ScalarMult(minusOne, p)
		t.Add(t, p)
		four := new(edwards25519.Point).Add(t, t)
		four.Add(four, four)
		if four.Equal(edwards25519.NewIdentityPoint()) == 1 {
			continue // order below 8: it generates only part of the subgroup
		}
		out := make([][]byte, 8)
		q := edwards25519.NewIdentityPoint()
		for i := range out {
			out[i] = q.Bytes()
			q = new(edwards25519.Point).Add(q, t)
		}
		return out
	}
}

func scalarOne() *edwards25519.Scalar {
	b := make([]byte, 32)
	b[0] = 1
	s, err := edwards25519.NewScalar().SetCanonicalBytes(b)
	if err != nil {
		panic(err)
	}
	return s
}

// NonCanonicalKey returns a point of full order encoded with y ≥ 2^255−19
// (y + p for a small y), and the canonical encoding of the same point.
func NonCanonicalKey() (nonCanonical, canonical []byte) {
	for v := byte(2); v < 19; v++ {
		p, b := smallY(v)
		if p == nil || isSmallOrder(p) {
			continue
		}
		nc := make([]byte, ed25519.PublicKeySize)
		for i := range nc {
			nc[i] = 0xff
		}
		nc[0], nc[31] = 0xed+v, 0x7f // p = 2^255−19 little-endian, plus v
		return nc, b
	}
	panic("no y below 19 is on the curve with full order")
}

// OffCurveKey returns 32 bytes that are no point of the curve.
func OffCurveKey() []byte {
	for v := byte(2); ; v++ {
		if p, b := smallY(v); p == nil {
			return b
		}
	}
}
