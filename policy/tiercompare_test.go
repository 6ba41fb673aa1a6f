package policy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoTierComparedOutside: outside this package no code compares a tier with one of
// the Net constants (==, != or a switch case); it asks the tier's questions, so a tier
// added here is answered for everywhere (issue 18: a tier's answers live in one file).
func TestNoTierComparedOutside(t *testing.T) {
	isTier := func(e ast.Expr) bool {
		s, ok := e.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		x, ok := s.X.(*ast.Ident)
		return ok && x.Name == "policy" && strings.HasPrefix(s.Sel.Name, "Net")
	}
	fset := token.NewFileSet()
	seen := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		seen++
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BinaryExpr:
				if (n.Op == token.EQL || n.Op == token.NEQ) && (isTier(n.X) || isTier(n.Y)) {
					t.Errorf("%s: compares a tier with a constant: ask policy.Tier a question", fset.Position(n.Pos()))
				}
			case *ast.CaseClause:
				for _, e := range n.List {
					if isTier(e) {
						t.Errorf("%s: a switch case on a tier constant: ask policy.Tier a question", fset.Position(e.Pos()))
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 100 {
		t.Fatalf("read %d Go files above policy: not the repository", seen)
	}
}
