package store

import (
	"testing"
)

// FuzzDecodeCursor: only cursors this store signed decode; anything else is
// a FieldError on cursor, never a panic.
func FuzzDecodeCursor(f *testing.F) {
	s := &Store{cursorKey: []byte("a fixed key for the fuzz target.")}
	good := s.encodeCursor(cursor{Query: "q", Key: 12.5, ID: "rabc", Pos: 50, Rank: 3})
	for _, c := range []string{good, good[:len(good)-1], "", ".", "e30." + good[len(good)-22:], "%%%"} {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		c, err := s.decodeCursor(raw, "q")
		if err != nil {
			if fe, ok := err.(*FieldError); !ok || fe.Field != "cursor" {
				t.Fatalf("error %v, want a FieldError on cursor", err)
			}
			return
		}
		if c.ID == "" || c.Key == nil {
			t.Fatalf("decoded an incomplete cursor %+v", c)
		}
	})
}
