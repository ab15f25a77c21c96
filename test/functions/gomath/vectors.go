//go:build ignore

// Reference vectors for Eddy's SQL math functions: what eKuiper 1.14 computes for each of them, taken from Go's
// own math package, as exact float64 bit patterns. test/functions/gomath.test.ts checks Eddy against the file this
// program writes, so the comparison needs no Go toolchain.
//
// Regenerate (Debian: apt-get install golang-go; needs linux/amd64 on a CPU with AVX and FMA, as Go's math.Exp
// takes a fused multiply-add path on such CPUs, which is what eKuiper gives on any x86-64 machine of the last
// decade):
//
//	cd test/functions/gomath && go run vectors.go && npx prettier --write vectors.json
//
// Each SQL function is evaluated the way eKuiper's function table evaluates it (the Go expression is in `sql`
// below); results are the raw float64 values before eKuiper turns NaN into null or an infinite cot into an
// error. Inputs: edge cases (±0, subnormals, NaN, ±Inf, the switch points of Go's algorithms, values next to
// multiples of π/2, huge trigonometric arguments) and random values from a fixed seed.
package main

import (
	"fmt"
	"math"
	"math/cmplx"
	"math/rand"
	"os"
	"runtime"
	"sort"
	"strings"
)

const seed = 26

type unary struct {
	name  string
	extra func(r *rand.Rand) []float64 // inputs specific to this function
	f     func(x float64) float64
}

type binary struct {
	name string
	xs   []float64 // edge values of the first argument
	ys   []float64 // edge values of the second argument
	rnd  func(r *rand.Rand) (float64, float64)
	f    func(x, y float64) float64
}

// Degrees and radians multiply by these exactly rounded constants.
const (
	radToDeg = 180 / math.Pi
	degToRad = math.Pi / 180
)

func main() {
	if runtime.GOARCH != "amd64" || !cpuHasFMA() {
		fmt.Fprintln(os.Stderr, "vectors.go: run on linux/amd64 with a CPU that has AVX and FMA (see the comment at the top)")
		os.Exit(1)
	}
	r := rand.New(rand.NewSource(seed))
	unaries := []unary{
		{"abs", none, math.Abs},
		{"acos", unitInterval, math.Acos},
		{"asin", unitInterval, math.Asin},
		{"atan", wide, math.Atan},
		{"ceil", halves, math.Ceil},
		{"cos", trig, math.Cos},
		{"cosh", expRange, math.Cosh},
		{"cot", cotRange, func(x float64) float64 { return real(cmplx.Cot(complex(x, 0))) }},
		{"degrees", wide, func(x float64) float64 { return x * radToDeg }},
		{"exp", expRange, math.Exp},
		{"floor", halves, math.Floor},
		{"ln", positive, math.Log},
		{"log", positive, math.Log10},
		{"radians", wide, func(x float64) float64 { return x * degToRad }},
		{"round", halves, math.Round},
		{"sin", trig, math.Sin},
		{"sinh", expRange, math.Sinh},
		{"sqrt", positive, math.Sqrt},
		{"tan", trig, math.Tan},
		{"tanh", tanhRange, math.Tanh},
	}
	common := []float64{0, 1, -1, 0.5, -0.5, 2, -2, 3, 10, -10, 1e-300, 1e300, -1e300, 5e-324, -5e-324,
		math.Inf(1), math.Inf(-1), math.NaN(), math.Pi, -math.Pi, math.E, 35, 27.1, 1e10, -1e10}
	binaries := []binary{
		{"atan2", common, common, func(r *rand.Rand) (float64, float64) { return anyScale(r), anyScale(r) },
			math.Atan2},
		// log(b, x): eKuiper divides the natural logarithms, base first.
		{"log2", []float64{2, 10, math.E, 0.5, 1, 0, -1, 3, 1e-300, 1e300, 5e-324, math.Inf(1), math.NaN(), 7.5},
			[]float64{8, 1000, 35, 2, 1, 0.5, 0, -3, 1e-300, 1e300, 5e-324, math.Inf(1), math.NaN(), 1024, 0.1},
			func(r *rand.Rand) (float64, float64) { return logUniform(r, -20, 20), logUniform(r, -300, 300) },
			func(b, x float64) float64 { return math.Log(x) / math.Log(b) }},
		{"mod", append(common, 10.5, -10.5, 1e22, 7, 1.5),
			[]float64{3, -3, 2, 0.5, 0, -0.0, 1e-300, 5e-324, 1e300, math.Inf(1), math.NaN(), math.Pi, 0.1, 7, -2.5},
			func(r *rand.Rand) (float64, float64) { return anyScale(r), anyScale(r) },
			math.Mod},
		{"power", []float64{0, -0.0, 1, -1, 2, -2, 0.5, -0.5, 10, -10.5, 1e-300, 1e300, 5e-324, math.Inf(1),
			math.Inf(-1), math.NaN(), 1.0000001, 0.999999, math.E, 35, 27.1},
			[]float64{0, -0.0, 1, -1, 2, -2, 3, -3, 0.5, -0.5, 1.5, -2.5, 10, 100.5, 1e10, -1e10, 1 << 63, 1 << 64,
				1e300, math.Inf(1), math.Inf(-1), math.NaN(), 0.1, 7, 1.0 / 3, 53},
			powerPair, math.Pow},
	}

	var b strings.Builder
	b.WriteString("{\n")
	fmt.Fprintf(&b, "  \"about\": \"eKuiper's SQL math functions evaluated with Go's math package (%s %s/%s, FMA); "+
		"float64 bit patterns in hex: [input, result] or [first, second, result]. Written by vectors.go.\",\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&b, "  \"pi\": \"%016x\",\n", math.Float64bits(math.Pi))
	b.WriteString("  \"unary\": {\n")
	for i, u := range unaries {
		xs := dedupe(append(append(edges(), u.extra(r)...), randoms(r)...))
		fmt.Fprintf(&b, "    %q: [\n", u.name)
		for j, x := range xs {
			fmt.Fprintf(&b, "      [\"%016x\", \"%016x\"]%s\n", math.Float64bits(x), math.Float64bits(u.f(x)),
				comma(j, len(xs)))
		}
		fmt.Fprintf(&b, "    ]%s\n", comma(i, len(unaries)))
	}
	b.WriteString("  },\n  \"binary\": {\n")
	for i, bn := range binaries {
		var pairs [][2]float64
		for _, x := range bn.xs {
			for _, y := range bn.ys {
				pairs = append(pairs, [2]float64{x, y})
			}
		}
		for k := 0; k < 150; k++ {
			x, y := bn.rnd(r)
			pairs = append(pairs, [2]float64{x, y})
		}
		fmt.Fprintf(&b, "    %q: [\n", bn.name)
		for j, p := range pairs {
			fmt.Fprintf(&b, "      [\"%016x\", \"%016x\", \"%016x\"]%s\n", math.Float64bits(p[0]),
				math.Float64bits(p[1]), math.Float64bits(bn.f(p[0], p[1])), comma(j, len(pairs)))
		}
		fmt.Fprintf(&b, "    ]%s\n", comma(i, len(binaries)))
	}
	b.WriteString("  }\n}\n")
	if err := os.WriteFile("vectors.json", []byte(b.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func comma(i, n int) string {
	if i == n-1 {
		return ""
	}
	return ","
}

// cpuHasFMA reads the CPU flags the way Go's runtime decides to use FMA in math.Exp (AVX and FMA both present).
func cpuHasFMA() bool {
	info, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return false
	}
	flags := " " + string(info) + " "
	return strings.Contains(flags, " avx ") && strings.Contains(flags, " fma ")
}

// edges are the inputs every unary function is checked on, with their negatives.
func edges() []float64 {
	pos := []float64{
		0, 5e-324, 1e-320, 2.2250738585072009e-308, 2.2250738585072014e-308, 1e-300, 1e-200, 1e-100, 1e-20,
		1e-15, 1e-10, 1e-8, 1e-5, 1e-3, 0.1, 0.25, 0.3, 0.49999999999999994, 0.5, 0.5000000000000001, 0.625,
		0.66, 0.7, math.Sqrt2 / 2, math.Nextafter(math.Sqrt2/2, 0), math.Nextafter(math.Sqrt2/2, 1), 0.9, 0.99,
		math.Nextafter(1, 0), 1, math.Nextafter(1, 2), math.Sqrt2, 1.5, 2, 2.5, math.E, 2.414213562373095,
		2.4142135623730954, 3, math.Pi, 5, 10, 10.5, math.Nextafter(21, 0), 21, math.Nextafter(21, 22), 27.1, 35,
		44, 44.014845965556525, 44.02, 100, 180, 360, 700, 709.78, 7.09782712893384e+02,
		math.Nextafter(7.09782712893384e+02, 800), 710, 745, 745.2, 1000, 12345.678, 1e6, 1e10,
		math.Nextafter(1<<29, 0), 1 << 29, math.Nextafter(1<<29, 1<<30), 1 << 30, 1e15, 1 << 52, 4503599627370495.5,
		1e20, 1e22, 6381956970095103 * math.Pow(2, 797), 1e50, 1e100, 1e200, 1e300, math.MaxFloat64,
		math.Inf(1),
	}
	out := []float64{math.NaN()}
	for _, x := range pos {
		out = append(out, x, -x)
	}
	return out
}

// nearMultiples are k·step for a few k, with both neighbouring floats: where argument reduction loses bits.
func nearMultiples(step float64, ks []float64) []float64 {
	var out []float64
	for _, k := range ks {
		v := k * step
		out = append(out, v, math.Nextafter(v, 0), math.Nextafter(v, math.Inf(1)), -v)
	}
	return out
}

var multiplesK = []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 31, 50, 100, 355, 1000, 1e4, 1e6, 1e8,
	3e8}

func none(*rand.Rand) []float64 { return nil }

func trig(r *rand.Rand) []float64 {
	out := nearMultiples(math.Pi/2, multiplesK)
	out = append(out, nearMultiples(math.Pi/4, []float64{1, 3, 5, 7, 9})...)
	for i := 0; i < 40; i++ {
		out = append(out, logUniform(r, 9, 300)) // Payne–Hanek territory and just below it
	}
	return out
}

func cotRange(r *rand.Rand) []float64 {
	out := nearMultiples(math.Pi, multiplesK)
	out = append(out, nearMultiples(math.Pi/2, []float64{1, 3, 5, 101})...)
	for i := 0; i < 30; i++ {
		out = append(out, logUniform(r, 9, 300))
	}
	for i := 0; i < 30; i++ { // within a quarter of a multiple of π, where Go switches to a series
		out = append(out, math.Round(r.Float64()*20-10)*math.Pi+(r.Float64()-0.5)*0.9)
	}
	return out
}

func unitInterval(r *rand.Rand) []float64 {
	out := []float64{0.75, -0.75, 0.7000000000000001, 0.6999999999999998, 0.999999999, 1.0000001}
	for i := 0; i < 80; i++ {
		out = append(out, r.Float64()*2-1)
	}
	return out
}

func expRange(r *rand.Rand) []float64 {
	out := []float64{-708.39, -708.4, -709, -744.4, -745.1332191019411, -745.1332191019412, -746, 88.7, 0.6931471805599453,
		-0.6931471805599453, 20.999999, 22}
	for i := 0; i < 80; i++ {
		out = append(out, r.Float64()*1500-750)
	}
	for i := 0; i < 40; i++ {
		out = append(out, r.Float64()*50-25)
	}
	return out
}

func tanhRange(r *rand.Rand) []float64 {
	out := []float64{0.6249999999999999, 0.625, 0.6250000000000001, 44.01484596555652, 44.01484596555653}
	for i := 0; i < 80; i++ {
		out = append(out, r.Float64()*50-25)
	}
	return out
}

func positive(r *rand.Rand) []float64 {
	out := []float64{1000, 1e-3, 0.1, 0.3, 7, 1024, 1e308}
	// Go's amd64 Log halves the mantissa when it is not above √2/2 — equality included, which shows at 2^32·√2/2
	for _, k := range []int{-1000, -100, -10, 2, 10, 32, 100, 1000} {
		out = append(out, math.Ldexp(math.Sqrt2/2, k))
	}
	for i := 0; i < 80; i++ {
		out = append(out, logUniform(r, -323, 308))
	}
	for i := 0; i < 40; i++ {
		out = append(out, r.Float64()*4)
	}
	return out
}

func wide(r *rand.Rand) []float64 {
	var out []float64
	for i := 0; i < 60; i++ {
		out = append(out, anyScale(r))
	}
	return out
}

func halves(r *rand.Rand) []float64 {
	out := []float64{1.5, -1.5, 2.5, -2.5, 0.49999999999999994, -0.49999999999999994, 4503599627370495.5,
		-4503599627370495.5, 4503599627370497, 9007199254740993}
	for i := 0; i < 40; i++ {
		out = append(out, math.Round(r.Float64()*2000-1000)/2) // exact halves
	}
	return out
}

// randoms are the seeded inputs every unary function is checked on.
func randoms(r *rand.Rand) []float64 {
	var out []float64
	for i := 0; i < 60; i++ {
		out = append(out, r.Float64()*20-10)
	}
	for i := 0; i < 30; i++ {
		out = append(out, r.Float64()*2000-1000)
	}
	for i := 0; i < 50; i++ {
		out = append(out, anyScale(r))
	}
	for i := 0; i < 20; {
		x := math.Float64frombits(r.Uint64())
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			out = append(out, x)
			i++
		}
	}
	for i := 0; i < 20; i++ {
		out = append(out, float64(r.Intn(2001)-1000))
	}
	return out
}

// logUniform is ±10^u for u uniform in [lo, hi): every binade of the range equally likely.
func logUniform(r *rand.Rand, lo, hi float64) float64 {
	x := math.Pow(10, lo+r.Float64()*(hi-lo))
	if r.Intn(2) == 0 {
		return -x
	}
	return x
}

func anyScale(r *rand.Rand) float64 { return logUniform(r, -300, 300) }

func powerPair(r *rand.Rand) (float64, float64) {
	switch r.Intn(4) {
	case 0:
		return r.Float64() * 100, r.Float64()*100 - 50
	case 1:
		return math.Abs(logUniform(r, -300, 300)), r.Float64()*20 - 10
	case 2:
		return -r.Float64() * 50, float64(r.Intn(61) - 30)
	default:
		return r.Float64() * 2, r.Float64()*4000 - 2000
	}
}

// dedupe drops repeated inputs (by bit pattern), keeping the first occurrence, then sorts by value (NaN first).
func dedupe(xs []float64) []float64 {
	seen := map[uint64]bool{}
	var out []float64
	for _, x := range xs {
		b := math.Float64bits(x)
		if !seen[b] {
			seen[b] = true
			out = append(out, x)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if math.IsNaN(out[i]) || math.IsNaN(out[j]) {
			return math.IsNaN(out[i]) && !math.IsNaN(out[j])
		}
		return out[i] < out[j]
	})
	return out
}
