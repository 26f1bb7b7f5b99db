package engine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// TestOrderingSeam keeps the ordering mode behind its seam (delivery.go):
// outside the files of the seam, no code reads Config.OrderingKey, looks
// into a partState's delivery for its type, or names a keyPart. Before the
// seam, key order was 22 branches in 9 files, and each new rule for it had
// to find them all.
func TestOrderingSeam(t *testing.T) {
	seam := map[string]bool{
		"delivery.go": true, "delivery_none.go": true, "config.go": true,
		"keyed.go": true, "keyed_ack.go": true, "keyed_commit.go": true,
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || seam[name] {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if n.Sel.Name == "OrderingKey" {
					t.Errorf("%s: reads the ordering mode outside its seam (delivery.go)", fset.Position(n.Pos()))
				}
			case *ast.TypeAssertExpr: // in a type switch too
				if s, ok := n.X.(*ast.SelectorExpr); ok && s.Sel.Name == "dlv" {
					t.Errorf("%s: asserts a delivery's type outside its seam (delivery.go)", fset.Position(n.Pos()))
				}
			case *ast.Ident:
				if n.Name == "keyPart" || n.Name == "unordered" {
					t.Errorf("%s: names %s outside the seam (delivery.go)", fset.Position(n.Pos()), n.Name)
				}
			}
			return true
		})
	}
}
