package site

import (
	"math"
	"strconv"

	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"golang.org/x/text/number"
)

// Numbers on pages are written for people: three significant digits below
// a hundred (93.7, 1.37, 0.0123), whole numbers from there (279, 1,273),
// grouped as the reader's language groups them. The exact values are in
// the JSON each page links, and in the value of each table cell's <data>.

// numbers formats values in one language.
type numbers struct{ p *message.Printer }

func newNumbers(tag language.Tag) numbers { return numbers{message.NewPrinter(tag)} }

// decimals is how many fraction digits v needs for three significant
// digits, none from a hundred up.
func decimals(v float64) int {
	a := math.Abs(v)
	if a == 0 || a >= 100 || math.IsNaN(a) || math.IsInf(a, 0) {
		return 0
	}
	return min(2-int(math.Floor(math.Log10(a))), 8)
}

// float writes v for people.
func (n numbers) float(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	d := decimals(v)
	// Round first: number.Decimal would otherwise show 99.96 as 100.0.
	r := math.Round(v*math.Pow(10, float64(d))) / math.Pow(10, float64(d))
	if d > 0 && decimals(r) < d {
		d = decimals(r)
	}
	return n.p.Sprint(number.Decimal(r, number.MaxFractionDigits(d)))
}

// fixed writes v with exactly d fraction digits (ratios, percentages).
func (n numbers) fixed(v float64, d int) string {
	return n.p.Sprint(number.Decimal(v, number.MinFractionDigits(d), number.MaxFractionDigits(d)))
}

// tokens writes a context as pages do: 48K for 49152 (a whole number of
// K, as runs name their contexts), else the count grouped (50,000; 1,152).
func (n numbers) tokens(v int) string {
	if v > 0 && v%1024 == 0 {
		return n.int(v/1024) + "K"
	}
	return n.int(v)
}

// int writes a count, grouped.
func (n numbers) int(v int) string { return n.p.Sprint(number.Decimal(v)) }

// num is the template function: a float, an int or their pointers, "—"
// when absent.
func (n numbers) num(v any) string {
	switch x := v.(type) {
	case *float64:
		if x == nil {
			return "—"
		}
		return n.float(*x)
	case float64:
		return n.float(x)
	case *int:
		if x == nil {
			return "—"
		}
		return n.int(*x)
	case int:
		return n.int(x)
	case int64:
		return n.int(int(x))
	case *int64:
		if x == nil {
			return "—"
		}
		return n.int(int(*x))
	}
	return n.p.Sprint(v)
}

// exact is a value as published: the shortest form that reads back
// exactly, for a <data> element's value.
func exact(v any) string {
	switch x := v.(type) {
	case *float64:
		if x == nil {
			return ""
		}
		return strconv.FormatFloat(*x, 'f', -1, 64)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case *int:
		if x == nil {
			return ""
		}
		return strconv.Itoa(*x)
	case int:
		return strconv.Itoa(x)
	}
	return ""
}
