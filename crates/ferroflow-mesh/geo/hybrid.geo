// Hexahedra, tetrahedra and the pyramids Gmsh puts between them: two unit cubes side by side,
// [0, 1]^3 in hexahedra, [1, 2] x [0, 1]^2 in tetrahedra; quadrilaterals on every surface.
SetFactory("OpenCASCADE");
Box(1) = {0, 0, 0, 1, 1, 1};
Box(2) = {1, 0, 0, 1, 1, 1};
Coherence;
Transfinite Curve{:} = 4;
Transfinite Surface{:};
Transfinite Volume{1};
Recombine Surface{:};
Recombine Volume{1};
e = 1e-6;
xmin() = Surface In BoundingBox{-e, -e, -e, e, 1 + e, 1 + e};
xmax() = Surface In BoundingBox{2 - e, -e, -e, 2 + e, 1 + e, 1 + e};
inner() = Surface In BoundingBox{1 - e, -e, -e, 1 + e, 1 + e, 1 + e};
walls() = Surface{:};
walls() -= {xmin(), xmax(), inner()};
Physical Surface("xmin") = {xmin()};
Physical Surface("xmax") = {xmax()};
Physical Surface("walls") = {walls()};
Physical Volume("fluid") = {1, 2};
