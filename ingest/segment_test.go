package ingest

import (
	"slices"
	"strings"
	"testing"
)

func TestNumberFormats(t *testing.T) {
	tests := []struct {
		in        string
		ints      []int
		decs      []int
		contextOK bool
		context   int
	}{
		{in: "0", ints: []int{1}, contextOK: true},
		{in: "01", ints: []int{1}},
		{in: "921", ints: []int{1, 2, 3}},
		{in: "9213", ints: []int{1, 2, 3}}, // no separator: 9,213 would be printed
		{in: "2,824", ints: []int{1, 5}},
		{in: "2,82430.0 s", ints: []int{1, 5}},
		{in: "1,286.540.3", ints: []int{1, 5}, decs: []int{7}},
		{in: "94.294.3", ints: []int{1, 2}, decs: []int{4}},
		{in: "1,2345", ints: []int{1, 5}},
		{in: "1,23", ints: []int{1}},
		{in: ",123", ints: nil},
		{in: "1,000,000,000,000,000,000,000", ints: []int{1, 5, 9, 13, 17, 21, 25}},
		{in: "16K", ints: []int{1, 2}, contextOK: true, context: 16384},
		{in: "248K", ints: []int{1, 2, 3}, contextOK: true, context: 253952},
		{in: "1M", ints: []int{1}, contextOK: true, context: 1 << 20},
		{in: "0K", ints: []int{1}},
		{in: "016K", ints: []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := intLens(tt.in); !slices.Equal(got, tt.ints) {
				t.Errorf("intLens = %v, want %v", got, tt.ints)
			}
			if got := dec1Lens(tt.in); !slices.Equal(got, tt.decs) {
				t.Errorf("dec1Lens = %v, want %v", got, tt.decs)
			}
			if got, ok := contextTokens(tt.in); ok != tt.contextOK || got != tt.context {
				t.Errorf("contextTokens = %d, %v, want %d, %v", got, ok, tt.context, tt.contextOK)
			}
		})
	}
}

func TestSegment(t *testing.T) {
	decode := []matcher{colAvgActive.matcher(false), colCompleted.matcher(false), colOutput.matcher(false), colDuration.matcher(false)}
	tests := []struct {
		name string
		in   string
		ms   []matcher
		want []string // readings, columns joined with "|"
		far  int
		col  int
	}{
		{"separators decide", "1.002,82430.0 s", decode, []string{"1.0|0|2,824|30.0 s"}, 0, 0},
		{"leading zero decides", "67.0036,38129.9 s", decode, []string{"67.0|0|36,381|29.9 s"}, 0, 0},
		{"two readings for the checks", "0.9092130.0 s", decode, []string{"0.9|0|921|30.0 s", "0.9|0|92|130.0 s"}, 0, 0},
		{"dashes", "0.70030.0 s", decode, []string{"0.7|0|0|30.0 s"}, 0, 0},
		{"all dashes", "————", decode, []string{"—|—|—|—"}, 0, 0},
		{"bad unit", "1.002,82430.0 m", decode, nil, 9, 3},
		{"left over", "1.002,82430.0 sx", decode, nil, 15, 4},
		{"grid row", "16K86.2753 ms TTFT154.81,130 ms TTFTOver capacity", []matcher{contextLens, gridCellLens, gridCellLens, gridCellLens},
			[]string{"16K|86.2753 ms TTFT|154.81,130 ms TTFT|Over capacity"}, 0, 0},
		{"grid cell with status", "30.7Requests queued3,439 ms TTFT", []matcher{gridCellLens}, []string{"30.7Requests queued3,439 ms TTFT"}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, far, col, err := segment(tt.in, tt.ms, maxReadings, &budget{steps: pageBudget})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rs {
				got = append(got, strings.Join(r, "|"))
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("readings %q, want %q", got, tt.want)
			}
			if len(rs) == 0 && (far != tt.far || col != tt.col) {
				t.Fatalf("stopped at %d in column %d, want %d in %d", far, col, tt.far, tt.col)
			}
		})
	}
}

func TestSegmentBudget(t *testing.T) {
	ms := []matcher{contextLens}
	for range 3000 {
		ms = append(ms, gridCellLens)
	}
	_, _, _, err := segment("0"+strings.Repeat("1.01 ms TTFT", 3000)+"x", ms, 2, &budget{steps: pageBudget})
	if err != errBudget {
		t.Fatalf("got %v, want errBudget", err)
	}
}
