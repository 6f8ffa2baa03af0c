package server

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// Routes lists the routes echo serves behind h, a handler New returned.
func Routes(h http.Handler) []*echo.Route { return h.(headAsGet).next.(*echo.Echo).Routes() }
