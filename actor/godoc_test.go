package actor_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actord/actord/actor"
	"github.com/actord/actord/executor"
)

// TestAliasDocsNameEveryField: go doc on an alias of an engine type shows
// only the alias's own comment, so each user-facing alias documents the
// exported fields and methods of its type there: every one is named in it
// (methods promoted from Message, documented with it, excepted).
func TestAliasDocsNameEveryField(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.ParseComments)
	require.NoError(t, err)
	files := []*ast.File{}
	for _, f := range pkgs["actor"].Files {
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, "github.com/actord/actord/actor")
	require.NoError(t, err)
	docs := map[string]string{}
	for _, ty := range p.Types {
		docs[ty.Name] = ty.Doc
	}
	msgMethods := map[string]bool{}
	mt := reflect.TypeFor[*executor.Message]()
	for i := 0; i < mt.NumMethod(); i++ {
		msgMethods[mt.Method(i).Name] = true
	}
	for name, typ := range map[string]reflect.Type{
		"Terminated":  reflect.TypeFor[actor.Terminated](),
		"Failure":     reflect.TypeFor[actor.Failure](),
		"PanicError":  reflect.TypeFor[actor.PanicError](),
		"Stats":       reflect.TypeFor[actor.Stats](),
		"WorkerStats": reflect.TypeFor[actor.WorkerStats](),
		"Timer":       reflect.TypeFor[actor.Timer](),
		"Request":     reflect.TypeFor[actor.Request[int]](),
	} {
		d, ok := docs[name]
		if !assert.True(t, ok, "no doc for %s", name) {
			continue
		}
		var names []string
		for i := 0; i < typ.NumField(); i++ {
			if f := typ.Field(i); f.IsExported() && !f.Anonymous {
				names = append(names, f.Name)
			}
		}
		pt := reflect.PointerTo(typ)
		for i := 0; i < pt.NumMethod(); i++ {
			if m := pt.Method(i).Name; !msgMethods[m] {
				names = append(names, m)
			}
		}
		for _, n := range names {
			assert.Regexp(t, regexp.MustCompile(`\b`+n+`\b`), d, "the doc of actor.%s does not name %s", name, n)
		}
	}
}

// TestReasonLabels: every Reason's String is usable as a Prometheus label
// value without escaping (lower case, digits and underscores).
func TestReasonLabels(t *testing.T) {
	for _, r := range []actor.Reason{actor.ReasonUnknown, actor.ReasonNormal, actor.ReasonPanic, actor.ReasonBudget, actor.ReasonStopped} {
		assert.Regexp(t, `^[a-z][a-z0-9_]*$`, r.String())
	}
}
