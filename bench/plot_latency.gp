# Latency percentile distributions written by `latency_bench --hist-out PREFIX`
# (files PREFIX-<mode>-<rate>.dat: percentile, 1/(1-percentile), latency_us,
# count). x = 1/(1-percentile) on a log scale labelled 50% .. 99.99999%,
# y = latency in µs (log scale), one curve per file.
#
#   gnuplot -e "files='a.dat b.dat'; out='latency.png'" bench/plot_latency.gp
# Optional: ttl='plot title', ylabel_text='...', width=1200, height=700,
#           ymin=1, ymax=100000 (µs; default: autoscale),
#           strip='lat-' (prefix removed from the curve titles),
#           xmax=1e7 (right end of the x axis, 1/(1-percentile)).

if (!exists("files")) { print "plot_latency.gp: set files='a.dat b.dat ...'"; exit status 2 }
if (!exists("out")) out = "latency.png"
if (!exists("ttl")) ttl = "tickgate tick-to-book latency by percentile (CO-corrected)"
if (!exists("ylabel_text")) ylabel_text = "latency (µs)"
if (!exists("width")) width = 1200
if (!exists("height")) height = 700

# Curve title: file name without directory, ".dat" and the `strip` prefix.
basename(s) = strstrt(s, "/") > 0 ? basename(s[strstrt(s, "/") + 1:]) : s
if (!exists("strip")) strip = ""
nodat(b) = strlen(b) > 4 && b[strlen(b) - 3:] eq ".dat" ? b[1:strlen(b) - 4] : b
noprefix(b) = strlen(strip) > 0 && strlen(b) > strlen(strip) && b[1:strlen(strip)] eq strip ? b[strlen(strip) + 1:] : b
label(s) = noprefix(nodat(basename(s)))

# Ten distinguishable colours, solid; the next ten dashed.
array palette[10] = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"]
do for [i = 1:10] { set linetype i linecolor rgb palette[i] linewidth 2 dashtype solid }
do for [i = 11:20] { set linetype i linecolor rgb palette[i - 10] linewidth 2 dashtype 2 }
set linetype cycle 20

set terminal pngcairo size width, height enhanced font "DejaVu Sans,11"
set output out
set title ttl
set logscale x 10
set logscale y 10
if (!exists("xmax")) xmax = 1e7
set xrange [1:xmax]
if (exists("ymin") && exists("ymax")) { set yrange [ymin:ymax] } else { set autoscale y }
set xtics ("0%%" 1, "50%%" 2, "90%%" 10, "99%%" 100, "99.9%%" 1000, "99.99%%" 10000, "99.999%%" 100000, "99.9999%%" 1000000, "99.99999%%" 10000000)
set format y "%g"
set xlabel "percentile"
set ylabel ylabel_text
set grid xtics ytics mytics
set key bottom right box opaque noenhanced
set datafile commentschars "#"

plot for [i = 1:words(files)] word(files, i) using 2:3 with lines linetype i title label(word(files, i))
