package assess

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/matrixd/matrixd/calculator"
	"github.com/matrixd/matrixd/store"
)

// refuseLookAlikes is a *store.ValidationError listing every problem of r
// (store's and the look-alikes') when r names a look-alike; nil otherwise.
func (w *Writer) refuseLookAlikes(r store.Run) error {
	probs := w.lookAlikes(r)
	if len(probs) == 0 {
		return nil
	}
	var ve *store.ValidationError
	if errors.As(r.Validate(), &ve) {
		probs = append(ve.Problems, probs...)
	}
	return &store.ValidationError{Problems: probs}
}

// lookAlikes are the problems of a run whose GPU or model is named so as
// to read as a name the catalogs know while being spelt otherwise: "RTX
// 3O60" (a letter O for the zero), "РТХ 3060" (Cyrillic letters only),
// "ＲＴＸ 3060" (full-width letters). Such a name would be a GPU or a model
// of its own, unchecked for plausibility and listed beside the real one.
// A name the catalog knows as it is written, or one that reads as no
// catalog name, is not a look-alike.
func (w *Writer) lookAlikes(r store.Run) []store.Problem {
	var probs []store.Problem
	if name := r.Hardware.GPU; name != "" {
		if _, ok := calculator.LookupGPU(name); !ok {
			if folded := fold(name); folded != name {
				if g, ok := calculator.LookupGPU(folded); ok {
					probs = append(probs, store.Problem{Pointer: "/hardware/gpu", Message: fmt.Sprintf(
						"reads as %q of the hardware catalog but is spelt with other characters (%s): write it as %s", g.Name, spelling(name), g.Name)})
				}
			}
		}
	}
	if name := r.Model.Name; name != "" {
		if folded := fold(name); folded != name {
			m, ok := w.models.Lookup(folded)
			if was, known := w.models.Lookup(name); ok && (!known || was.Name != m.Name) {
				// Suggest the name with only its odd characters made plain
				// when that reads as the model, so that a letter the name
				// rightly holds beside a digit (Model1) is not offered as one.
				write := folded
				if p := plain(name); p != name {
					if pm, ok := w.models.Lookup(p); ok && pm.Name == m.Name {
						write = p
					}
				}
				probs = append(probs, store.Problem{Pointer: "/model/name", Message: fmt.Sprintf(
					"reads as the model %s of the model facts table but is spelt with other characters (%s): write it with the letters and digits it reads as (%s)", m.Name, spelling(name), write)})
			}
		}
	}
	return probs
}

// fold is what a name reads as: compatibility forms as their plain letters
// (NFKC: full-width, ligatures), invisible characters dropped, Cyrillic and
// Greek letters that look like Latin ones as those, and a letter O, l or I
// beside a digit as the digit it looks like.
func fold(s string) string {
	rs := []rune(plain(s))
	for changed := true; changed; {
		changed = false
		for i, c := range rs {
			d, ok := digit(c)
			if ok && (i > 0 && unicode.IsDigit(rs[i-1]) || i+1 < len(rs) && unicode.IsDigit(rs[i+1])) {
				rs[i], changed = d, true
			}
		}
	}
	return string(rs)
}

// plain is s with compatibility forms as their plain letters, invisible
// characters dropped, and Cyrillic and Greek look-alikes as the Latin
// letters they look like: fold without reading letters as digits.
func plain(s string) string {
	return strings.Map(func(c rune) rune {
		if unicode.Is(unicode.Cf, c) {
			return -1
		}
		return latin(c)
	}, norm.NFKC.String(s))
}

// spelling lists the characters of a name that are not plain ASCII, or
// says that its letters stand for digits.
func spelling(s string) string {
	var odd []string
	for _, c := range s {
		if c > unicode.MaxASCII {
			odd = append(odd, fmt.Sprintf("%c U+%04X", c, c))
		}
	}
	if len(odd) == 0 {
		return "a letter where a digit belongs"
	}
	if len(odd) > 4 {
		odd = append(odd[:4], "…")
	}
	return strings.Join(odd, ", ")
}

// lookAlikeFrom are the Cyrillic and Greek letters drawn like the Latin
// letters at the same place in lookAlikeTo.
const (
	lookAlikeFrom = "АВЕКМНОРСТУХЅІЈԚԜҮаеорсухѕіјһԁԛԝӏүΑΒΕΖΗΙΚΜΝΟΡΤΥΧονικρατυ"
	lookAlikeTo   = "ABEKMHOPCTYXSIJQWYaeopcyxsijhdqwlyABEZHIKMNOPTYXovikpatu"
)

// latin is the Latin letter c is drawn like, or c.
func latin(c rune) rune {
	if i := strings.IndexRune(lookAlikeFrom, c); i >= 0 {
		return rune(lookAlikeTo[utf8.RuneCountInString(lookAlikeFrom[:i])])
	}
	return c
}

// digit is the digit a letter beside a digit is read as.
func digit(c rune) (rune, bool) {
	switch c {
	case 'O', 'o':
		return '0', true
	case 'I', 'l':
		return '1', true
	}
	return c, false
}
