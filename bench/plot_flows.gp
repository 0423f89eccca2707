# ns per message per flow and protocol, from the table bench/report.py
# writes with --flows (columns: "flow", mean, p50, p99; "?" where a flow has
# no per-datagram percentiles): three bars per flow on a log scale.
#
#   gnuplot -e "data='flows.dat'; out='flows.png'" bench/plot_flows.gp
# Optional: ttl='plot title', width=1300, height=650.

if (!exists("data")) { print "plot_flows.gp: set data='flows.dat'"; exit status 2 }
if (!exists("out")) out = "flows.png"
if (!exists("ttl")) ttl = "tickgate in-process pipeline, ns per message, per flow and protocol"
if (!exists("width")) width = 1300
if (!exists("height")) height = 650

set terminal pngcairo size width, height enhanced font "DejaVu Sans,11"
set output out
set title ttl
set datafile separator "\t"
set datafile missing "?"
set datafile commentschars "#"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set logscale y 10
set yrange [1:*]
set format y "%g"
set ylabel "ns per message"
set grid ytics mytics
set xtics rotate by -30 left noenhanced
set key top left box opaque
set bmargin 8
set rmargin 10
# Issue 24's goal for ITCH + the order book.
set arrow from graph 0, first 50 to graph 1, first 50 nohead dashtype 2 linecolor rgb "#555555"
set label "50 ns (issue 24, ITCH goal)" at graph 0.005, first 58 left textcolor rgb "#555555"

plot data using 2:xtic(1) title "mean" linecolor rgb "#1f77b4", \
     '' using 3 title "p50 per datagram" linecolor rgb "#2ca02c", \
     '' using 4 title "p99 per datagram" linecolor rgb "#d62728"
