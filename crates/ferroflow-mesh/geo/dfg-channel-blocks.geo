// DFG 3D benchmark channel (as dfg-channel.geo: [0, 2.5] x [0, 0.41] x [0, 0.41] m, a cylinder
// of diameter 0.1 m at (x, y) = (0.5, yc) through the full height) in structured blocks, for
// forces whose error is small: an O-grid of six blocks around the cylinder, graded toward it,
// inside the square |x - 0.5|, |y - yc| <= a, and ten rectangles filling the channel, graded
// toward the walls and the square. The cross-section is triangulated, then extruded along z
// into prisms, in layers graded toward z = 0 and z = 0.41 and symmetric about z = 0.205.
//
// Mirror symmetry: every block between y = yc - a and yc + a has a mirror image in y = yc with
// the same points and the mirrored diagonals, so the cross-section's triangles there are
// symmetric about the cylinder; only the wall bands differ (0.41 - yc - a against yc - a).
// The finite elements take tetrahedra: split the prisms so that the cuts keep both symmetries
// (Gmsh's own split, by node numbers, does not, and gives a lift of the size of the
// benchmark's with the cylinder centred, yc = 0.205; BENCHMARKS.md):
//
//   gmsh dfg-channel-blocks.geo -3 -setnumber n 6 -o prisms.msh
//   ferroflow mesh convert prisms.msh dfg.su2 --tetrahedra --mirror 0.2,0.205
//
// `n` cells span each 45 degrees of the cylinder; every other count and grading follows it, so
// `-setnumber n N` refines the whole mesh by N / 4 (the convergence table of BENCHMARKS.md).
DefineConstant[yc = 0.2, n = 4];
L = 2.5; H = 0.41; xc = 0.5; r = 0.05; a = 0.15;
c = Sqrt(0.5);
s = 4 / n;

Point(1) = {xc, yc, 0};
// The cylinder at 0, 45, 135, 180, 225 and 315 degrees; the square at the same angles.
Point(2) = {xc + r, yc, 0};
Point(3) = {xc + r * c, yc + r * c, 0};
Point(4) = {xc - r * c, yc + r * c, 0};
Point(5) = {xc - r, yc, 0};
Point(6) = {xc - r * c, yc - r * c, 0};
Point(7) = {xc + r * c, yc - r * c, 0};
Point(12) = {xc + a, yc, 0};
Point(13) = {xc + a, yc + a, 0};
Point(14) = {xc - a, yc + a, 0};
Point(15) = {xc - a, yc, 0};
Point(16) = {xc - a, yc - a, 0};
Point(17) = {xc + a, yc - a, 0};
// Inlet, walls and outlet.
Point(20) = {0, 0, 0}; Point(21) = {0, yc - a, 0}; Point(22) = {0, yc, 0};
Point(23) = {0, yc + a, 0}; Point(24) = {0, H, 0};
Point(25) = {xc - a, 0, 0}; Point(26) = {xc - a, H, 0};
Point(27) = {xc + a, 0, 0}; Point(28) = {xc + a, H, 0};
Point(30) = {L, 0, 0}; Point(31) = {L, yc - a, 0}; Point(32) = {L, yc, 0};
Point(33) = {L, yc + a, 0}; Point(34) = {L, H, 0};

Circle(1) = {2, 1, 3}; Circle(2) = {3, 1, 4}; Circle(3) = {4, 1, 5};
Circle(4) = {5, 1, 6}; Circle(5) = {6, 1, 7}; Circle(6) = {7, 1, 2};
Line(11) = {2, 12}; Line(12) = {3, 13}; Line(13) = {4, 14};
Line(14) = {5, 15}; Line(15) = {6, 16}; Line(16) = {7, 17};
Line(21) = {12, 13}; Line(22) = {13, 14}; Line(23) = {14, 15};
Line(24) = {15, 16}; Line(25) = {16, 17}; Line(26) = {17, 12};
Line(31) = {20, 25}; Line(32) = {21, 16}; Line(33) = {22, 15}; Line(34) = {23, 14};
Line(35) = {24, 26};
Line(41) = {27, 30}; Line(42) = {17, 31}; Line(43) = {12, 32}; Line(44) = {13, 33};
Line(45) = {28, 34};
Line(51) = {20, 21}; Line(52) = {21, 22}; Line(53) = {22, 23}; Line(54) = {23, 24};
Line(55) = {25, 16}; Line(56) = {14, 26}; Line(57) = {27, 17}; Line(58) = {13, 28};
Line(61) = {30, 31}; Line(62) = {31, 32}; Line(63) = {32, 33}; Line(64) = {33, 34};
Line(65) = {25, 27}; Line(66) = {26, 28};

// Counts and gradings: cells per 45 degrees (n), across the O-grid (2n, first cell at the
// cylinder about as long as the cells along it), upstream (1.5n, shrinking toward the
// square), downstream (5n, growing to the outlet), across each wall band (n, smallest at the
// wall). A ratio q at n = 4 becomes q^(4/n), so the distribution keeps its shape.
Transfinite Curve{1, 3, 4, 6, 21, 23, 24, 26, 52, 53, 62, 63} = n + 1;
Transfinite Curve{2, 5, 22, 25, 65, 66} = 2 * n + 1;
Transfinite Curve{11:16} = 2 * n + 1 Using Progression 1.12^s;
Transfinite Curve{31:35} = Round(1.5 * n) + 1 Using Progression 0.9^s;
Transfinite Curve{41:45} = 5 * n + 1 Using Progression 1.087^s;
Transfinite Curve{51, 55, 57, 61} = n + 1 Using Progression 1.15^s;
Transfinite Curve{54, 56, 58, 64} = n + 1 Using Progression (1 / 1.15)^s;

Curve Loop(1) = {11, 21, -12, -1};   Curve Loop(2) = {12, 22, -13, -2};
Curve Loop(3) = {13, 23, -14, -3};   Curve Loop(4) = {14, 24, -15, -4};
Curve Loop(5) = {15, 25, -16, -5};   Curve Loop(6) = {16, 26, -11, -6};
Curve Loop(7) = {31, 55, -32, -51};  Curve Loop(8) = {32, -24, -33, -52};
Curve Loop(9) = {33, -23, -34, -53}; Curve Loop(10) = {34, 56, -35, -54};
Curve Loop(11) = {65, 57, -25, -55}; Curve Loop(12) = {-22, 58, -66, -56};
Curve Loop(13) = {41, 61, -42, -57}; Curve Loop(14) = {42, 62, -43, -26};
Curve Loop(15) = {43, 63, -44, -21}; Curve Loop(16) = {44, 64, -45, -58};
For k In {1:16}
  Plane Surface(k) = {k};
EndFor
// Mirror pairs (1, 6), (2, 5), (3, 4), (8, 9), (14, 15), and the bands (7, 10), (11, 12),
// (13, 16): the corners of each pair are listed as mirror images of each other, so its
// triangles' diagonals are mirror images too.
Transfinite Surface{1} = {2, 12, 13, 3};   Transfinite Surface{6} = {2, 12, 17, 7};
Transfinite Surface{2} = {3, 13, 14, 4};   Transfinite Surface{5} = {7, 17, 16, 6};
Transfinite Surface{3} = {4, 14, 15, 5};   Transfinite Surface{4} = {6, 16, 15, 5};
Transfinite Surface{9} = {22, 15, 14, 23}; Transfinite Surface{8} = {22, 15, 16, 21};
Transfinite Surface{15} = {12, 32, 33, 13}; Transfinite Surface{14} = {12, 32, 31, 17};
Transfinite Surface{10} = {23, 14, 26, 24}; Transfinite Surface{7} = {21, 16, 25, 20};
Transfinite Surface{12} = {14, 13, 28, 26}; Transfinite Surface{11} = {16, 17, 27, 25};
Transfinite Surface{16} = {13, 33, 34, 28}; Transfinite Surface{13} = {17, 31, 30, 27};

// Layers along z: z_k / H = k / nz - g sin(2 pi k / nz) / (2 pi), cells at the walls 1 - g
// times the mean; nz even, so that no layer straddles the mirror plane z = 0.205 (`-setnumber
// nz NZ` refines along z alone, to tell its error from the cross-section's).
DefineConstant[nz = 2 * Round(1.5 * n)];
g = 0.5;
For k In {1:nz}
  one[k - 1] = 1;
  z[k - 1] = k / nz - g * Sin(2 * Pi * k / nz) / (2 * Pi);
EndFor
z[nz - 1] = 1;
Extrude {0, 0, H} { Surface{1:16}; Layers{one[], z[]}; Recombine; }

e = 1e-6;
inlet() = Surface In BoundingBox{-e, -e, -e, e, H + e, H + e};
outlet() = Surface In BoundingBox{L - e, -e, -e, L + e, H + e, H + e};
cylinder() = Surface In BoundingBox{xc - r - e, yc - r - e, -e, xc + r + e, yc + r + e, H + e};
walls() = Surface In BoundingBox{-e, -e, -e, L + e, e, H + e};
walls() += Surface In BoundingBox{-e, H - e, -e, L + e, H + e, H + e};
walls() += Surface In BoundingBox{-e, -e, -e, L + e, H + e, e};
walls() += Surface In BoundingBox{-e, -e, H - e, L + e, H + e, H + e};
Physical Surface("inlet") = {inlet()};
Physical Surface("outlet") = {outlet()};
Physical Surface("walls") = {walls()};
Physical Surface("cylinder") = {cylinder()};
Physical Volume("fluid") = {Volume{:}};
