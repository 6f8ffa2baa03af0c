package predict

import (
	"time"

	"github.com/matrixd/matrixd/store"
)

// patient is New with a calculator that waits for its fits however long
// they take (SetFitWait and SetPlanFitBudget at -1), so that a test's
// answers do not hang on how fast the machine fits; the tests of answers
// given before their fits are made use New and set the waits they test.
func patient(st *store.Store, maxBytes int64, onFit func(time.Duration)) *Service {
	c := New(st, maxBytes, onFit)
	c.SetFitWait(-1)
	c.SetPlanFitBudget(-1)
	return c
}
