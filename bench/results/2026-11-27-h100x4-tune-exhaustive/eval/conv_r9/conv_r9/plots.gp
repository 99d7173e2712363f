# gnuplot bench/results/2026-11-27-h100x4-tune-exhaustive/eval/conv_r9/conv_r9/plots.gp (run from its directory): predicted.png, best-so-far.png
set datafile separator ','
set terminal pngcairo size 640,480
set key top left
set output 'predicted.png'
set logscale xy
set xlabel 'measured (us)'
set ylabel 'predicted (us)'
set title 'conv_r9: predicted vs measured'
plot 'predicted.csv' skip 1 using 2:3 with points pt 7 ps 0.6 title 'trials', x with lines title 'y = x'
unset logscale
set logscale y
set output 'best-so-far.png'
set xlabel 'trials'
set ylabel 'best so far (us)'
set title 'conv_r9: best so far'
plot 'best-so-far.csv' skip 1 using 1:2 with steps title 'the search', '' skip 1 using 1:3 with steps title 'the model order'
