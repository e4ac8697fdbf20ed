// DFG 3D benchmark (Schaefer & Turek 1996, flow around a cylinder): a channel
// [0, 2.5] x [0, 0.41] x [0, 0.41] m, a cylinder of diameter 0.1 m through its full height,
// axis at (x, y) = (0.5, yc), yc = 0.2. Coarse tetrahedra.
SetFactory("OpenCASCADE");
// yc = 0.205 centres the cylinder: the flow is then symmetric in y, its lift zero, and a
// computed lift measures the mesh's asymmetry (BENCHMARKS.md).
DefineConstant[yc = 0.2];
Box(1) = {0, 0, 0, 2.5, 0.41, 0.41};
Cylinder(2) = {0.5, yc, 0, 0, 0, 0.41, 0.05};
BooleanDifference(3) = {Volume{1}; Delete;}{Volume{2}; Delete;};
e = 1e-6;
inlet() = Surface In BoundingBox{-e, -e, -e, e, 0.41 + e, 0.41 + e};
outlet() = Surface In BoundingBox{2.5 - e, -e, -e, 2.5 + e, 0.41 + e, 0.41 + e};
cylinder() = Surface In BoundingBox{0.45 - e, yc - 0.05 - e, -e, 0.55 + e, yc + 0.05 + e, 0.41 + e};
// Element sizes in the channel and on the cylinder; `gmsh -setnumber h 0.04 -setnumber hc
// 0.01` refines (the mesh-convergence table of BENCHMARKS.md).
DefineConstant[h = 0.06, hc = 0.015];
MeshSize{PointsOf{Volume{3};}} = h;
MeshSize{PointsOf{Surface{cylinder()};}} = hc;
walls() = Surface{:};
walls() -= {inlet(), outlet(), cylinder()};
Physical Surface("inlet") = {inlet()};
Physical Surface("outlet") = {outlet()};
Physical Surface("walls") = {walls()};
Physical Surface("cylinder") = {cylinder()};
Physical Volume("fluid") = {3};
